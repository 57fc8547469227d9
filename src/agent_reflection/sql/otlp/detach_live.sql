DETACH otlp_live
