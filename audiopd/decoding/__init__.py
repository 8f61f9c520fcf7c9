"""audiopd.decoding"""
