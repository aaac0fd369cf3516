// AuthStore: c10d's Store calls as requests to the job's store (see auth_store.hpp).
#include "real/auth_store.hpp"

namespace locosim {

c10::intrusive_ptr<c10d::Store> AuthStore::clone() {
  const Login& l = login_;
  return c10::make_intrusive<AuthStore>(l.host, l.port, l.secret, l.rank, l.world_size, timeout_, l.limits);
}

void AuthStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  call({StoreOp::set, {key}, value, {}, 0});
}

std::vector<uint8_t> AuthStore::compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                           const std::vector<uint8_t>& desired) {
  return call({StoreOp::compare_set, {key}, desired, expected, 0}).value;
}

std::vector<uint8_t> AuthStore::get(const std::string& key) {
  StoreReply reply = call({StoreOp::get, {key}, {}, {}, timeout_.count()}, timeout_);
  if (reply.status == StoreStatus::timeout) {
    throw StoreTimeout("the job's store: key '" + key + "' did not appear within " +
                             std::to_string(timeout_.count() / 1000) + " s");
  }
  return std::move(reply.value);
}

int64_t AuthStore::add(const std::string& key, int64_t amount) {
  return int64_from(call({StoreOp::add, {key}, {}, {}, amount}).value);
}

bool AuthStore::deleteKey(const std::string& key) {
  return call({StoreOp::erase, {key}, {}, {}, 0}).value == std::vector<uint8_t>{1};
}

bool AuthStore::check(const std::vector<std::string>& keys) {
  return call({StoreOp::check, keys, {}, {}, 0}).value == std::vector<uint8_t>{1};
}

int64_t AuthStore::getNumKeys() { return int64_from(call({StoreOp::count, {}, {}, {}, 0}).value); }

void AuthStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void AuthStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  if (call({StoreOp::wait, keys, {}, {}, timeout.count()}, timeout).status == StoreStatus::timeout) {
    throw StoreTimeout("the job's store: keys did not appear within " + std::to_string(timeout.count() / 1000) +
                             " s (first: '" + keys.at(0) + "')");
  }
}

}  // namespace locosim
