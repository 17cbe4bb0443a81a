local function add_turn(K, doc, turn_json, triple)
  -- store a human seat's turn (its JSON numbered 0) and publish it; `triple` is its message
  local key = K.episode
  local turn = cjson.decode(turn_json)
  local seq = next_sequence(key)
  numbered(key, EPISODE.turns, turn_json, seq)
  redis.call('JSON.SET', key, EPISODE.progress, turn.turn + 1)
  local stored = redis.call('JSON.ARRLEN', key, EPISODE.messages)[1]
  if stored and turn.turn < stored then
    redis.call('JSON.ARRAPPEND', key, item(EPISODE.messages, turn.turn), triple)
  end
  local event = {type = EVENT.TURN, episode_id = doc.pk, sequence = seq, at = turn.at,
                 attempt = doc.attempt}
  local last = item(EPISODE.turns, -1)
  redis.call('PUBLISH', K.channel, event_with(event, EVENT_FIELD.turn, key, last))
  return seq
end

local function drop_seat(key, seat)
  local seats = EPISODE.waiting .. WAITING.seats
  local at = redis.call('JSON.ARRINDEX', key, seats, seat)[1]
  if at and at >= 0 then redis.call('JSON.ARRPOP', key, seats, at) end
  return redis.call('JSON.ARRLEN', key, seats)[1]
end
