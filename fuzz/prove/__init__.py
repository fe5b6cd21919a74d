"""``prove``: every configuration of a bounded space, checked in closed form."""
