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

local function with_sequence(json, seq)
  -- `json` (numbered 0 by Python, `storage.episode_store.numbered`: its first member is the
  -- sequence) given sequence `seq`
  local colon = string.find(json, ':', 1, true)
  local comma = colon and string.find(json, ',', colon, true)
  local first = colon and string.sub(json, 2, colon - 1)
  assert(comma and first == cjson.encode(string.sub(TURN.sequence, 2)), json)
  return string.sub(json, 1, colon) .. seq .. string.sub(json, comma)
end

local function numbered(key, list, json, seq)
  -- append `json` (numbered 0) to the list at `list`, given sequence `seq`, in one write
  redis.call('JSON.ARRAPPEND', key, list, with_sequence(json, seq))
end

local function stored_sequence(key)
  -- the episode's sequence number as stored now (0 for none)
  local found = cjson.decode(redis.call('JSON.GET', key, EPISODE.sequence))[1]
  if found == nil or found == cjson.null then return 0 end
  return found
end

local function new_patch(key)
  -- Writes to top-level fields ($.name) of an indexed record (an episode), made by
  -- `write_patch` in as few commands as keep their meaning: every JSON write re-indexes the
  -- whole record in each of its indexes, so one JSON.MERGE of many fields costs about what one
  -- JSON.SET does. A merge would remove a field set to null and merge into a stored object
  -- instead of replacing it, so a null is set on its own (only over a field that holds
  -- something else), and so is an object.
  return {key = key, names = {}, values = {}}
end

local function patch_set(patch, path, value)
  -- set the field at `path` ($.name) to `value` (JSON text), the last value of a path winning
  if patch.values[path] == nil then patch.names[#patch.names + 1] = path end
  patch.values[path] = value
end

local function patch_append(patch, path, item_json)
  -- append `item_json` to the list at `path` ($.name) as the patch writes it: the list's stored
  -- text (or what the patch sets it to) with the item added, so the append is in the merge
  local text = patch.values[path]
  if text == nil then
    local raw = redis.call('JSON.GET', patch.key, path)
    text = string.sub(raw, 2, -2)  -- the value inside the JSONPath's list of matches
  end
  if text == '' or text == 'null' or text == '[]' then
    text = '[' .. item_json .. ']'
  else
    text = string.sub(text, 1, -2) .. ',' .. item_json .. ']'
  end
  patch_set(patch, path, text)
end

local function write_patch(patch)
  local key, members = patch.key, {}
  for _, path in ipairs(patch.names) do
    local value, name = patch.values[path], string.sub(path, 3)
    if string.sub(value, 1, 1) == '{' then
      redis.call('JSON.SET', key, path, value)
    elseif value == 'null' then
      local kind = redis.call('JSON.TYPE', key, path)
      if kind[1] ~= nil and kind[1] ~= 'null' then redis.call('JSON.SET', key, path, 'null') end
    else
      members[#members + 1] = cjson.encode(name) .. ':' .. value
    end
  end
  if #members > 0 then
    redis.call('JSON.MERGE', key, '$', '{' .. table.concat(members, ',') .. '}')
  end
end
