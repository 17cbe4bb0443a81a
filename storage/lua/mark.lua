-- Set fields of an episode whose attempt is still A.attempt (no status change, no event).
-- MORE_ARGS: (JSON path, JSON value) pairs; K.scores is raised (keys.SCORES_VERSION). Returns 1, or 0 when the attempt moved on.
local raw = redis.call('JSON.GET', K.episode, EPISODE.attempt)
if not raw or cjson.decode(raw)[1] ~= tonumber(A.attempt) then return 0 end
local patch = new_patch(K.episode)
for i = 1, #MORE_ARGS, 2 do patch_set(patch, MORE_ARGS[i], MORE_ARGS[i + 1]) end
write_patch(patch)
redis.call('INCR', K.scores)
return 1
