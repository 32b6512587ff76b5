"""Compiled CPU kernels of Dawid-Skene EM; they import nothing above this package."""
