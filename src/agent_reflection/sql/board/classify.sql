-- Classify each incoming task against what is stored: new | same (fingerprint equal) | changed.
CREATE OR REPLACE TEMP TABLE board_touched AS
SELECT i.task_ref,
       CASE WHEN t.task_ref IS NULL THEN 'new'
            WHEN t.fingerprint = i.fingerprint THEN 'same'
            ELSE 'changed' END AS state
FROM board_incoming AS i
LEFT JOIN tasks AS t USING (task_ref);

SELECT task_ref, state FROM board_touched;
