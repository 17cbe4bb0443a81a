local function item(path, index)
  -- the JSONPath of element `index` of the list at `path` (-1: the last)
  return path .. '[' .. index .. ']'
end

local function event_with(event, field, key, path)
  -- `event` (a table) encoded with `field` set to the JSON stored at `path` of `key`, as it is
  -- stored: cjson would write an empty list in it as {}, and round its times.
  local stored = redis.call('JSON.GET', key, path)
  local head = cjson.encode(event)
  return string.sub(head, 1, -2) .. ',' .. cjson.encode(field) .. ':' .. string.sub(stored, 2, -2)
    .. '}'
end

local function next_sequence(key)
  return cjson.decode(redis.call('JSON.NUMINCRBY', key, EPISODE.sequence, 1))[1]
end

local function numbered(key, list, json, seq)
  -- append `json` (numbered 0 by Python) to the list at `list`, and give it sequence `seq`
  redis.call('JSON.ARRAPPEND', key, list, json)
  redis.call('JSON.SET', key, item(list, -1) .. TURN.sequence, seq)
end
