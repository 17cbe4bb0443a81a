-- Store and publish a worker's turn (A.turn, its JSON numbered 0) while A.attempt runs the
-- episode, and set Sotopia's messages of its turn (A.messages); MORE_ARGS: (JSON path, JSON
-- value) pairs of top-level fields set with it (its progress, its usage). Returns the turn's
-- sequence, or -1 when the attempt does not run it.
local key = K.episode
local raw = redis.call('JSON.GET', key, EPISODE.status, EPISODE.attempt, EPISODE.pk)
if not raw then return -1 end
local doc = cjson.decode(raw)
local attempt = doc[EPISODE.attempt][1]
if doc[EPISODE.status][1] ~= STATUS.RUNNING or attempt ~= tonumber(A.attempt) then return -1 end
local turn = cjson.decode(A.turn)
local last = cjson.decode(redis.call('JSON.GET', key, item(EPISODE.turns, -1)))[1]
if last and last.turn == turn.turn and last.agent_index == turn.agent_index then
  return last.sequence  -- the same write again (a retried command): already stored and sent
end
local seq = stored_sequence(key) + 1
-- Appended on their own: a merge would carry the whole lists, which grow with the episode.
numbered(key, EPISODE.turns, A.turn, seq)
local stored = redis.call('JSON.ARRLEN', key, EPISODE.messages)[1]
if turn.turn < stored then
  redis.call('JSON.SET', key, item(EPISODE.messages, turn.turn), A.messages)
else
  redis.call('JSON.ARRAPPEND', key, EPISODE.messages, A.messages)
end
local patch = new_patch(key)
patch_set(patch, EPISODE.sequence, tostring(seq))
for i = 1, #MORE_ARGS, 2 do patch_set(patch, MORE_ARGS[i], MORE_ARGS[i + 1]) end
write_patch(patch)
local event = {type = EVENT.TURN, episode_id = doc[EPISODE.pk][1], sequence = seq,
               at = turn.at, attempt = attempt}
redis.call('PUBLISH', K.channel, event_with(event, EVENT_FIELD.turn, key, item(EPISODE.turns, -1)))
return seq
