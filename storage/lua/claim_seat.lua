-- Give an open seat (A.seat) its token's hash, and the key its credential is found by (set to
-- A.entry): the first claim wins. Returns 1, 0 when claimed already, -1 when the episode is
-- gone, -2 when it has no such human seat.
local raw = redis.call('JSON.GET', K.episode, EPISODE.human_seats)
if not raw then return -1 end
local seats = cjson.decode(raw)[1] or {}
for i, s in ipairs(seats) do
  if s.seat == tonumber(A.seat) then
    if s.token_hash ~= '' then return 0 end
    local path = item(EPISODE.human_seats, i - 1) .. SEAT.token_hash
    redis.call('JSON.SET', K.episode, path, cjson.encode(A.token_hash))
    redis.call('SET', K.seat_token, A.entry)
    return 1
  end
end
return -2
