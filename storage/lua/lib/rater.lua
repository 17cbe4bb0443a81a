local function rater_refusal(study, rater, token_hash)
  -- Why the holder of `token_hash` may not write as rater number `rater` of the study at key
  -- `study` (a RATING_REFUSAL), or nil when they may: the token is checked before anything else
  -- about the study is said.
  local held_at = item(STUDY.raters, rater) .. RATER.token_hash
  local raw = redis.call('JSON.GET', study, STUDY.closed_at, held_at)
  if not raw then return RATING_REFUSAL.GONE end
  local found = cjson.decode(raw)
  local held = found[held_at]
  if not held or #held == 0 or held[1] == '' or held[1] ~= token_hash then
    return RATING_REFUSAL.TOKEN
  end
  if found[STUDY.closed_at][1] ~= cjson.null then return RATING_REFUSAL.CLOSED end
  return nil
end
