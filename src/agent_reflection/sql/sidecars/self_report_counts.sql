-- How the self-reports of the sidecars one load stored fared. $load_id: the load.
-- used: the record carries at least one self-report field; unusable: the agent's file was there
-- but could not be used (the hook kept its text and the reason in provenance); none: neither.
SELECT
    count(*) FILTER (
        WHERE confidence IS NOT NULL OR mlw_surface IS NOT NULL OR known_not_in_diff IS NOT NULL
    ) AS used,
    count(*) FILTER (WHERE self_report_text IS NOT NULL) AS unusable,
    count(*) AS stored
FROM reflections
WHERE load_id = $load_id
