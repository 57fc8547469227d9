-- Write one table ({{table}}, quoted) under folder $path, one sub-folder per value of the
-- column {{partition_column}} (Hive layout: column=value/), so readers can skip partitions.
COPY (SELECT * FROM {{table}}) TO $path (FORMAT parquet, PARTITION_BY ({{partition_column}}))
