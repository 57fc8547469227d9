-- Whether a repo's history is in the database at all (SZZ reads its fixes from `commits`).
SELECT count(*) FROM commits WHERE repo = ?
