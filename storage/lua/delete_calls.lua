-- Delete an episode's ledger: its calls, the cache's entries that name them, and each body no other episode's ledger refers to.
-- With A.before (epoch seconds), only a ledger whose last call ended before it (the retention
-- sweep: a call recorded since it chose the ledger keeps it). Returns how many bodies were
-- freed, or -1 when the ledger was kept.
if A.before ~= '' then
  local last = redis.call('ZSCORE', K.ledgers, A.episode)
  if last and tonumber(last) >= tonumber(A.before) then return -1 end
end
for _, entry in ipairs(redis.call('XRANGE', K.calls, '-', '+')) do
  local request = cjson.decode(entry[2][2]).request
  if redis.call('HGET', K.answers, request) == cjson.encode({A.episode, entry[1]}) then
    redis.call('HDEL', K.answers, request)
  end
end
local freed = 0
for _, hash in ipairs(redis.call('SMEMBERS', K.bodies)) do
  if redis.call('HINCRBY', K.refs, hash, -1) <= 0 then
    redis.call('HDEL', K.refs, hash)
    redis.call('DEL', A.body_prefix .. hash)
    freed = freed + 1
  end
end
redis.call('DEL', K.calls, K.bodies)
redis.call('ZREM', K.ledgers, A.episode)
return freed
