-- Commits whose whole ancestry is in `commits`: the tips a complete git load started from (no
-- --since, no excluded range, no unreadable commit, not a shallow clone). A re-load passes them
-- to git as exclusions (`^sha`), so it reads only the commits none of them reaches.
CREATE TABLE IF NOT EXISTS git_tips (
    repo    VARCHAR NOT NULL,   -- commits.repo
    sha     VARCHAR NOT NULL,   -- a commit id (force-pushed-away tips stay while git has them)
    load_id BIGINT NOT NULL,    -- the load that recorded it
    PRIMARY KEY (repo, sha)
);
