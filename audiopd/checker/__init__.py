"""audiopd.checker"""
