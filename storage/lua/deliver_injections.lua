-- Before turn A.turn of attempt A.attempt: number the injections not delivered yet with it.
-- Returns {1, the pause turn (-1: none), the turn's injections}; {0} when the attempt no longer
-- runs the episode.
local raw = redis.call('JSON.GET', K.episode, EPISODE.status, EPISODE.attempt, EPISODE.pause_at,
                       EPISODE.injections)
if not raw then return {0} end
local doc = cjson.decode(raw)
if doc[EPISODE.status][1] ~= STATUS.RUNNING or doc[EPISODE.attempt][1] ~= tonumber(A.attempt) then
  return {0}
end
local turn = tonumber(A.turn)
local delivered = {}
for i, injection in ipairs(doc[EPISODE.injections][1] or {}) do
  local path = item(EPISODE.injections, i - 1)
  if injection.turn == nil or injection.turn == cjson.null then
    redis.call('JSON.SET', K.episode, path .. INJECTION.turn, turn)
    injection.turn = turn
  end
  if injection.turn == turn then  -- as stored (cjson would turn an empty list into {})
    delivered[#delivered + 1] = redis.call('JSON.GET', K.episode, path)
  end
end
local pause_at = doc[EPISODE.pause_at][1]
if pause_at == nil or pause_at == cjson.null then pause_at = -1 end
return {1, pause_at, unpack(delivered)}
