"""audiopd.codec"""
