-- The sha of the (one) commit with this subject in the demo repository.
SELECT sha FROM commits WHERE subject = $subject
