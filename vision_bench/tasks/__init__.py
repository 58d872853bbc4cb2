"""Procedural grid tasks: grids and objects, the object library, the 28 transformations, the generator."""
