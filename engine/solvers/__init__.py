"""Time steppers built on the recursive algorithms (RedMax; Baraff and hard constraints to come)."""
