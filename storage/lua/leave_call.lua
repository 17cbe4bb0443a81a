-- A call ended: give back its place in flight (lease A.lease, "" for none) and A.refund of the
-- tokens it was charged beyond its real use (negative: charge more), which moves the key's
-- tokens arrival time back (a rate given as "" is not limited) and corrects this minute's count.
redis.call('ZREM', K.holders, A.lease)
local refund, tpm = tonumber(A.refund), tonumber(A.tokens_per_minute)
if refund == 0 then return 1 end
local held = redis.call('HMGET', K.state, LIMIT.TOKENS_AT, LIMIT.MINUTE)
if tpm and held[1] then
  redis.call('HSET', K.state, LIMIT.TOKENS_AT, exact(tonumber(held[1]) - refund * 60 / tpm))
end
if held[2] == tostring(math.floor(server_now() / 60)) then
  redis.call('HINCRBY', K.state, LIMIT.TOKENS, -refund)
end
return 1
