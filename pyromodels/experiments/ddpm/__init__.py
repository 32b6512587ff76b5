"""Reproduction of the DDPM paper (*Deep Dirichlet Process Mixture Models*): the paper's numbers
(:mod:`.paper_numbers`, Table 1 and the DDPM-minus-DPM differences derived from it)."""
