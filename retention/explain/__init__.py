"""`retention explain`: what a plan decided for one snapshot, and what every rule of every
policy of its cluster did with it, traced again from the plan's own record."""
