"""Fixed-classifier (stationary) methods: d-Simplex-HOC, HOC with a learnable classifier, d-Simplex-FD, CoReS, ETF-CE/ETF-DR."""
