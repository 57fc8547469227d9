-- P2: per fix (or diff-only revert), how many added/deleted lines of code files are real code vs
-- cosmetic (whitespace/comment/doc-only), and how many code lines only set a version string
-- (NULL when loaded before SZZ_VERSION 2) and how many changed only inside string literals or
-- markup text (NULL when loaded before SZZ_VERSION 3), from `fix_changes`.
SELECT repo, fix_sha,
       sum(CASE WHEN is_code THEN code_lines_added + code_lines_deleted ELSE 0 END)::BIGINT
           AS code_lines,
       sum(cosmetic_lines_added + cosmetic_lines_deleted)::BIGINT AS cosmetic_lines,
       CASE WHEN count(version_lines) = count(*)
            THEN sum(CASE WHEN is_code THEN version_lines ELSE 0 END) END::BIGINT
           AS version_lines,
       CASE WHEN count(text_lines) = count(*)
            THEN sum(CASE WHEN is_code THEN text_lines ELSE 0 END) END::BIGINT
           AS text_lines
FROM fix_changes
GROUP BY repo, fix_sha
ORDER BY repo, fix_sha
