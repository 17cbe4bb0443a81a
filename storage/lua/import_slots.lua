-- Put imported slots (and the episodes filling them) in place from slot A.first, unless the
-- experiment is stored already; the plan is made A.slot_count slots long (A.nulls) first.
-- MORE_ARGS: (slot JSON, episode id or '') per slot. Returns 1, or 0 when stored already.
if redis.call('EXISTS', K.experiment) == 1 then return 0 end
local count = tonumber(A.slot_count)
local length = -1
if redis.call('EXISTS', K.plan) == 1 then length = redis.call('JSON.ARRLEN', K.plan, '$')[1] end
if length ~= count then redis.call('JSON.SET', K.plan, '$', A.nulls) end
local first = tonumber(A.first)
for i = 1, #MORE_ARGS, 2 do
  local at = first + (i - 1) / 2
  redis.call('JSON.SET', K.plan, item('$', at), MORE_ARGS[i])
  if MORE_ARGS[i + 1] ~= '' then redis.call('HSET', K.slots, at, MORE_ARGS[i + 1]) end
end
redis.call('INCR', K.scores)  -- keys.SCORES_VERSION
return 1
