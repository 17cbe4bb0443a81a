-- Point each slot at its new episode, only where it still holds the episode it was read with
-- (a start that read an older state changes nothing). MORE_ARGS: (slot, expected episode or '',
-- new episode) per move. Returns 1 or 0 per move: whether it applied.
local filled = {}
for i = 1, #MORE_ARGS, 3 do
  local current = redis.call('HGET', K.slots, MORE_ARGS[i]) or ''
  if current == MORE_ARGS[i + 1] then
    redis.call('HSET', K.slots, MORE_ARGS[i], MORE_ARGS[i + 2])
    filled[#filled + 1] = 1
  else
    filled[#filled + 1] = 0
  end
end
redis.call('INCR', K.scores)  -- an experiment's episodes changed (keys.SCORES_VERSION)
return filled
