"""Stages of a step that several steppers share: loop-closure rows, joint limits, the joints' geometric
stiffness and the energy guard (docs/architecture.md, "The stages")."""
