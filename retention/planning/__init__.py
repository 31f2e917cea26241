"""The plan step as a job: walk, decide (here or on worker processes), write the plan whole."""
