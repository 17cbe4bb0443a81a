-- Close a study at A.now: its rater links open nothing from then on; its ratings stay.
-- Returns 1, 0 when it was closed already (its time kept), -1 when it is gone.
local raw = redis.call('JSON.GET', K.study, STUDY.closed_at)
if not raw then return -1 end
if cjson.decode(raw)[1] ~= cjson.null then return 0 end
redis.call('JSON.SET', K.study, STUDY.closed_at, A.now)
return 1
