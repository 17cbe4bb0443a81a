-- Store an imported experiment (A.document) once all its A.slot_count slots are in place. Returns
-- an IMPORT_OUTCOME: skipped when it is stored already; named when another experiment has its
-- name and tag (its slots are dropped); incomplete when some slot is missing.
if redis.call('EXISTS', K.experiment) == 1 then return IMPORT_OUTCOME.SKIPPED end
local holder = redis.call('HGET', K.names, A.name)
if holder and holder ~= A.id and redis.call('EXISTS', A.prefix .. holder) == 1 then
  redis.call('DEL', K.plan, K.slots)
  return IMPORT_OUTCOME.NAMED
end
local count = tonumber(A.slot_count)
if count > 0 then
  if redis.call('EXISTS', K.plan) == 0 then return IMPORT_OUTCOME.INCOMPLETE end
  if redis.call('JSON.ARRLEN', K.plan, '$')[1] ~= count then return IMPORT_OUTCOME.INCOMPLETE end
  if redis.call('JSON.ARRINDEX', K.plan, '$', 'null')[1] ~= -1 then
    return IMPORT_OUTCOME.INCOMPLETE
  end
end
redis.call('HSET', K.names, A.name, A.id)
redis.call('JSON.SET', K.experiment, '$', A.document)
return IMPORT_OUTCOME.CREATED
