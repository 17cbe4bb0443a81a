-- Append one model call (A.entry) to an episode's ledger; store each body it refers to
-- (MORE_KEYS[i], named by the hash MORE_ARGS[2i-1], its text MORE_ARGS[2i]) once, counting
-- each episode that refers to it once; index an answered request (A.request, '' for a call that
-- failed or asked no model) for the cache. Returns the entry's id.
for i, key in ipairs(MORE_KEYS) do
  local hash = MORE_ARGS[2 * i - 1]
  if redis.call('SADD', K.bodies, hash) == 1 then
    redis.call('HINCRBY', K.refs, hash, 1)
    redis.call('SET', key, MORE_ARGS[2 * i])
  end
end
local id = redis.call('XADD', K.calls, '*', A.field, A.entry)
if A.request ~= '' then redis.call('HSET', K.answers, A.request, cjson.encode({A.episode, id})) end
redis.call('ZADD', K.ledgers, A.now, A.episode)
return id
