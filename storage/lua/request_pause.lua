-- Ask a running episode's worker to pause it: before its next turn, or after one more when
-- A.mode is a step. Returns the episode's status ('' when it is gone).
local raw = redis.call('JSON.GET', K.episode, EPISODE.status, EPISODE.progress)
if not raw then return '' end
local doc = cjson.decode(raw)
local status = doc[EPISODE.status][1]
if status == STATUS.RUNNING then
  local at = 0
  if A.mode == PAUSE_MODE.step then at = (doc[EPISODE.progress][1] or 0) + 1 end
  redis.call('JSON.SET', K.episode, EPISODE.pause_at, at)
end
return status
