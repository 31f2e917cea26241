"""Operations support: the run lock, metrics, logs, stopping, the thread window, doctor."""
