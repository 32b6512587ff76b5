"""Potts-model kernels (Gauss-Seidel sweeps, greedy colouring); they import nothing above this
package."""
