-- Store a new experiment (A.document) and its slots (A.plan) unless its name and tag (A.name)
-- name a stored one already. Returns {1, A.id}, or {0, the stored one's id}.
local earlier = redis.call('HGET', K.names, A.name)
if earlier and redis.call('EXISTS', A.prefix .. earlier) == 1 then return {0, earlier} end
redis.call('HSET', K.names, A.name, A.id)
redis.call('JSON.SET', K.experiment, '$', A.document)
redis.call('JSON.SET', K.plan, '$', A.plan)
return {1, A.id}
