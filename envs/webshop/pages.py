"""Fixed texts of WebShop's pages (text nodes of its HTML templates) shared by rendering and vocabulary."""

SEP = " [SEP] "
END_BUTTON = "Buy Now"
NEXT_PAGE = "Next >"
PREV_PAGE = "< Prev"
BACK_TO_SEARCH = "Back to Search"
SUB_PAGES = ("Description", "Features", "Reviews")
PAGE_WORDS = ("WebShop", "Instruction:", "Search", BACK_TO_SEARCH, "Page", "(Total", "results:", PREV_PAGE,
              NEXT_PAGE, "Price:", "Rating:", *SUB_PAGES, END_BUTTON, "Thank you for shopping with us!",
              "Your score (min 0.0, max 1.0)", "[SEP]", "search[", "click[", "]", "N.A.", "$")
