-- Write a draft's records, or nothing: MORE_KEYS the keys, MORE_ARGS[i] the JSON document
-- for MORE_KEYS[i] when A.documents says so (a JSON list of booleans), else its string value.
-- Returns i when MORE_KEYS[i] exists already (nothing written), else 0.
for i, key in ipairs(MORE_KEYS) do
  if redis.call('EXISTS', key) == 1 then return i end
end
local documents = cjson.decode(A.documents)
for i, key in ipairs(MORE_KEYS) do
  if documents[i] then
    redis.call('JSON.SET', key, '$', MORE_ARGS[i])
  else
    redis.call('SET', key, MORE_ARGS[i])
  end
end
return 0
