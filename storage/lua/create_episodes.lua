-- Store QUEUED episodes, announce them and queue their jobs, claiming their idempotency keys
-- and keying their human seats by token hash (`keys.seat_token`) in the same step, once every
-- required key exists: a crash leaves either all of it or none of it, and a record deleted
-- meanwhile cannot be referenced.
-- MORE_KEYS: the A.required keys, then per episode its idempotency key, its key, its channel.
-- MORE_ARGS: per episode its id, document, event, keyed ('' when not) and job entry.
local required = tonumber(A.required)
local missing = {}
for i = 1, required do
  if redis.call('EXISTS', MORE_KEYS[i]) == 0 then missing[#missing + 1] = i end
end
if #missing > 0 then return {0, missing} end
local ids = {}
for n = 0, #MORE_ARGS / 5 - 1 do
  local k, a = required + 3 * n, 5 * n
  local claim, key, channel = MORE_KEYS[k + 1], MORE_KEYS[k + 2], MORE_KEYS[k + 3]
  local id, document, event = MORE_ARGS[a + 1], MORE_ARGS[a + 2], MORE_ARGS[a + 3]
  local keyed, job = MORE_ARGS[a + 4] ~= '', MORE_ARGS[a + 5]
  local earlier = keyed and redis.call('GET', claim)
  if earlier and redis.call('EXISTS', A.prefix .. earlier) == 1 then
    ids[#ids + 1] = earlier
  else
    if keyed then
      redis.call('SET', claim, id, 'EX', A.ttl)  -- new, or left by an episode that is gone
    end
    redis.call('JSON.SET', key, '$', document)
    for _, seat in ipairs(cjson.decode(document).human_seats or {}) do
      if seat.token_hash ~= '' then  -- a seat credential finds its seat by this key
        redis.call('SET', A.seat_prefix .. seat.token_hash, cjson.encode({id, seat.seat}))
      end
    end
    log_and_publish(K.events_log, A.minid, cjson.decode(event), {channel, K.everyone})
    redis.call('XADD', K.jobs, '*', unpack(cjson.decode(job)))
    ids[#ids + 1] = id
  end
end
redis.call('INCR', K.scores)  -- a tag's episodes changed (keys.SCORES_VERSION)
return {1, ids}
