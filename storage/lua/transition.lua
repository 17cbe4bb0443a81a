-- Move an episode to A.status if legal from its current one (A.allowed, a JSON list) and if
-- A.fence ('' for none) is still its attempt; A.mode begins a new attempt. MORE_ARGS: (JSON path,
-- JSON value) pairs to set with it. Returns {1, status}; {2, status} when the same owner's write
-- was applied already; {0, status} when not legal ('' when gone); {-1, status} when fenced.
local doc = episode_doc(K.episode, EPISODE.owner, EPISODE.turns)
if not doc then return {0, ''} end
local status, attempt, fence, mode = doc.status, doc.attempt, A.fence, A.mode
if fence ~= '' and A.owner ~= '' and doc.owner == A.owner then
  -- the same worker's write again (its reply was lost to a dropped connection): done already
  local same = status == A.status
  local begun = mode ~= ATTEMPT_MODE.none and same and attempt == tonumber(fence) + 1
  local moved = mode == ATTEMPT_MODE.none and same and attempt == tonumber(fence)
  if begun or moved then return {2, status} end
end
local legal = false
for _, from in ipairs(cjson.decode(A.allowed)) do
  if from == status then legal = true end
end
if not legal then return {0, status} end
if fence ~= '' and tonumber(fence) ~= attempt then return {-1, status} end
local kept = nil
local patch = new_patch(K.episode)
if mode ~= ATTEMPT_MODE.none then
  attempt = attempt + 1
  patch_set(patch, EPISODE.attempt, tostring(attempt))
  patch_set(patch, EPISODE.owner, cjson.encode(A.owner))
  if mode == ATTEMPT_MODE.restart then
    patch_set(patch, EPISODE.turns, '[]')
    patch_set(patch, EPISODE.messages, '[]')
    patch_set(patch, EPISODE.rewards, '[]')
    patch_set(patch, EPISODE.judge_runs, '[]')
    patch_set(patch, EPISODE.progress, tostring(0))
  else
    local turns = doc.turns or {}
    if #turns > 0 then kept = turns[#turns].turn + 1 end
  end
end
for i = 1, #MORE_ARGS, 2 do patch_set(patch, MORE_ARGS[i], MORE_ARGS[i + 1]) end
change_status(K, doc, A.status, attempt, A.now, A.reason, kept, A.waiting, A.job, A.minid, patch)
write_patch(patch)
redis.call('INCR', K.scores)  -- its scores may have changed (keys.SCORES_VERSION)
return {1, A.status}
