"""The read models' writers: the projector (catch-up, rebuild) and the tables it keeps."""
