-- Delete an episode's ledger: its calls, and each body no other episode's ledger refers to.
-- Returns how many bodies were freed.
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
