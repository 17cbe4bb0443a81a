-- Take a place among a provider key's calls in flight: a lease A.lease in the sorted set of
-- holders by deadline, for A.seconds. A holder whose deadline passed (its process died, or its
-- call outlived every timeout) is let go first. Returns 1 when taken, 0 when the
-- A.max_in_flight places are all held.
local now = server_now()
redis.call('ZREMRANGEBYSCORE', K.holders, 0, exact(now))
if redis.call('ZCARD', K.holders) >= tonumber(A.max_in_flight) then return 0 end
local seconds = tonumber(A.seconds)
redis.call('ZADD', K.holders, exact(now + seconds), A.lease)
keep(K.holders, math.ceil(seconds) + 1)
return 1
