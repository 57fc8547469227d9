-- After a board batch (or its failure): drop the classification table board/classify.sql made.
DROP TABLE IF EXISTS board_touched
