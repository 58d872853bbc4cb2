"""The ground floor: atomic writes and the process pool, which every layer uses and which import nothing above them."""
