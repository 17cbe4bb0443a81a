-- Store an environment message (A.injection, its JSON numbered 0, not yet given a turn) and
-- publish it, while the conversation goes on. Returns {1, sequence}, or {0, status} ('' when
-- the episode is gone).
local raw = redis.call('JSON.GET', K.episode, EPISODE.status, EPISODE.pk, EPISODE.attempt)
if not raw then return {0, ''} end
local doc = cjson.decode(raw)
local status = doc[EPISODE.status][1]
local open = {STATUS.QUEUED, STATUS.RUNNING, STATUS.WAITING, STATUS.PAUSED}
local going = false
for _, s in ipairs(open) do
  if s == status then going = true end
end
if not going then return {0, status} end
local seq = next_sequence(K.episode)
numbered(K.episode, EPISODE.injections, A.injection, seq)
local event = {type = EVENT.INJECTION, episode_id = doc[EPISODE.pk][1], sequence = seq,
               at = cjson.decode(A.injection).at, attempt = doc[EPISODE.attempt][1] or 0}
local last = item(EPISODE.injections, -1)
redis.call('PUBLISH', K.channel, event_with(event, EVENT_FIELD.injection, K.episode, last))
return {1, seq}
