-- A person's action for seat A.seat in turn A.turn: refused unless A.token_hash is the seat's
-- and the episode waits for that seat in that turn; the last seat of a turn queues the episode
-- again (A.job: the job's entry). Returns {1, sequence} or {0, refusal, status}.
local seat = tonumber(A.seat)
local doc = episode_doc(K.episode, EPISODE.waiting, EPISODE.human_seats)
if not doc then return {0, ACT_REFUSAL.GONE} end
local holder = nil
for _, s in ipairs(doc.human_seats or {}) do
  if s.seat == seat then holder = s end
end
if not holder then return {0, ACT_REFUSAL.NOT_HUMAN} end
if holder.token_hash == '' or holder.token_hash ~= A.token_hash then
  return {0, ACT_REFUSAL.TOKEN}
end
if doc.status ~= STATUS.WAITING then return {0, ACT_REFUSAL.STATUS, doc.status} end
local waiting = doc.waiting
local awaited = false
for _, s in ipairs(waiting.seats) do
  if s == seat then awaited = true end
end
if not awaited or waiting.turn ~= tonumber(A.turn) then return {0, ACT_REFUSAL.NOT_AWAITED} end
local seq = add_turn(K, doc, A.body, A.triple)
if drop_seat(K.episode, seat) == 0 then
  change_status(K, doc, STATUS.QUEUED, doc.attempt, A.now, '', nil, '', A.job, A.minid)
end
return {1, seq}
