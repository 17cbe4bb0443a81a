local function log_and_publish(log, minid, event, channels)
  -- A status event goes to the events log (a Stream trimmed to the retention window) and is
  -- published with its log id, which episodeUpdates streams resume from.
  local id = redis.call('XADD', log, 'MINID', minid, '*', LOG_ENTRY.event, cjson.encode(event))
  event.log_id = id
  local payload = cjson.encode(event)
  for _, channel in ipairs(channels) do redis.call('PUBLISH', channel, payload) end
  return id
end
