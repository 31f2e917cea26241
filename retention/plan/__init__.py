"""The plan step: walk, decide (here or on worker processes), write the plan whole."""
