-- A waiting turn (A.turn) past its deadline: the episode fails, or each seat left leaves (a
-- `leave` turn) or is played by the stand-in model, and the episode is queued again (A.job).
-- MORE_ARGS: per seat left its number, its turn's JSON and its message. Returns 1, or 0 when
-- the episode no longer waits for that turn.
local turn_no = tonumber(A.turn)
local doc = episode_doc(K.episode, EPISODE.waiting, EPISODE.on_seat_timeout)
if not doc or doc.status ~= STATUS.WAITING then
  redis.call('ZREM', K.deadlines, A.episode_id)
  return 0
end
local waiting = doc.waiting
if waiting.turn ~= turn_no or waiting.deadline > tonumber(A.now) then return 0 end
if doc.on_seat_timeout == SEAT_TIMEOUT.FAIL then
  redis.call('JSON.SET', K.episode, EPISODE.error, cjson.encode(A.reason))
  redis.call('JSON.SET', K.episode, EPISODE.finished_at, A.now)
  change_status(K, doc, STATUS.FAILED, doc.attempt, A.now, A.reason, nil, '', '', A.minid)
  return 1
end
for i = 1, #MORE_ARGS, 3 do
  local seat = tonumber(MORE_ARGS[i])
  if doc.on_seat_timeout == SEAT_TIMEOUT.STAND_IN then
    redis.call('JSON.ARRAPPEND', K.episode, EPISODE.stand_ins, cjson.encode({seat, turn_no}))
  else
    add_turn(K, doc, MORE_ARGS[i + 1], MORE_ARGS[i + 2])
  end
  drop_seat(K.episode, seat)
end
change_status(K, doc, STATUS.QUEUED, doc.attempt, A.now, A.reason, nil, '', A.job, A.minid)
return 1
