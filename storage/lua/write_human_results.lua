-- Write a rating study's evaluation records (MORE_KEYS[i] gets the JSON document MORE_ARGS[i];
-- an empty one deletes it: its episode is gone), computed from its ratings at A.version (the
-- sum of its rating revisions, which every save raises), unless records of a later version are
-- written: a reader that computed them from older ratings never overwrites newer ones. K.inputs
-- keeps A.inputs, the version of all they were computed from. Returns 1 if written, else 0.
local held = tonumber(redis.call('GET', K.version)) or -1
if held > tonumber(A.version) then return 0 end
for i, key in ipairs(MORE_KEYS) do
  if MORE_ARGS[i] == '' then
    redis.call('DEL', key)
  else
    redis.call('JSON.SET', key, '$', MORE_ARGS[i])
  end
end
redis.call('SET', K.version, A.version)
redis.call('SET', K.inputs, A.inputs)
return 1
