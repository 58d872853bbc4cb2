"""SVIB's scenes in the grid world: two objects with colour, shape and size factors, and SVIB's rules over them."""
