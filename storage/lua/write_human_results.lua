-- Write a rating study's evaluation records (MORE_KEYS[i] gets the JSON document MORE_ARGS[i]),
-- computed from its ratings at A.version (the sum of its rating revisions, which every save
-- raises), unless records of that version or a later one are written: a reader that computed
-- them from older ratings never overwrites newer ones. Returns 1 if written, else 0.
local held = tonumber(redis.call('GET', K.version) or '-1')
if held >= tonumber(A.version) then return 0 end
for i, key in ipairs(MORE_KEYS) do redis.call('JSON.SET', key, '$', MORE_ARGS[i]) end
redis.call('SET', K.version, A.version)
return 1
