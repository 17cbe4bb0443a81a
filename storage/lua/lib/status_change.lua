local function change_status(K, doc, new, attempt, now, reason, kept, waiting, job, minid, patch)
  -- The one status change every script makes: a new sequence number, the status and its
  -- history entry, the deadline of a WAITING (set, or dropped when leaving it), a job when it
  -- is queued again (`job`: its entry's fields and values, as JSON), and the event, logged and
  -- published. K: the episode's key, its channel, everyone's channel, the events log, the
  -- deadlines and the job stream; doc: the episode's status, pk, tag and experiment_id.
  -- `patch` (new_patch) holds the caller's other writes to the episode: they are written
  -- with these, in as few commands as keep their meaning; without one, these are written here.
  local key, pk = K.episode, doc.pk
  local own = patch == nil
  if own then patch = new_patch(key) end
  local seq = stored_sequence(key) + 1
  patch_set(patch, EPISODE.sequence, tostring(seq))
  local change = {status = new, at = tonumber(now), sequence = seq, attempt = attempt}
  local event = {type = EVENT.STATUS, episode_id = pk, sequence = seq, at = tonumber(now),
                 attempt = attempt, status = new, previous_status = doc.status}
  if reason ~= '' then change.reason = reason; event.reason = reason end
  if kept then change.resumed_from = kept; event.resumed_from = kept end
  if doc.status == STATUS.WAITING then
    redis.call('ZREM', K.deadlines, pk)
    patch_set(patch, EPISODE.waiting, 'null')
  end
  if waiting ~= '' then
    local w = cjson.decode(waiting)
    change.waiting = w; event.waiting = w
    patch_set(patch, EPISODE.waiting, waiting)
    redis.call('ZADD', K.deadlines, w.deadline, pk)
  end
  patch_set(patch, EPISODE.status, cjson.encode(new))
  patch_append(patch, EPISODE.status_history, cjson.encode(change))
  if job ~= '' then
    local id = redis.call('XADD', K.jobs, '*', unpack(cjson.decode(job)))
    patch_set(patch, EPISODE.job, cjson.encode(id))
  end
  if doc.tag ~= nil and doc.tag ~= cjson.null then event.tag = doc.tag end
  if doc.experiment_id ~= nil and doc.experiment_id ~= cjson.null then
    event.experiment_id = doc.experiment_id
  end
  if own then write_patch(patch) end
  log_and_publish(K.events_log, minid, event, {K.channel, K.everyone})
  return seq
end

local function episode_doc(key, ...)
  -- The named fields of an episode (first values of their JSONPaths), or nil when it is gone.
  local paths = {EPISODE.status, EPISODE.attempt, EPISODE.tag, EPISODE.pk, EPISODE.experiment_id,
                 ...}
  local raw = redis.call('JSON.GET', key, unpack(paths))
  if not raw then return nil end
  local found, doc = cjson.decode(raw), {}
  for _, path in ipairs(paths) do doc[string.sub(path, 3)] = found[path][1] end
  doc.attempt = doc.attempt or 0
  return doc
end
