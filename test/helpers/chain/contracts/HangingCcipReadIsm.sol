// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;

/// @notice A CCIP-read ISM (Hyperlane module type 7) whose OffchainLookup names the URLs it was
/// deployed with: a hostile recipient's ISM pointing the relayer at gateways that never answer.
/// `verify` accepts anything (the lookup never completes in the scenarios that use it).
contract HangingCcipReadIsm {
    uint8 public constant moduleType = 7;
    string[] internal urls;

    error OffchainLookup(address sender, string[] urls, bytes callData, bytes4 callbackFunction, bytes extraData);

    constructor(string[] memory urls_) {
        urls = urls_;
    }

    function getOffchainVerifyInfo(bytes calldata message) external view {
        revert OffchainLookup(address(this), urls, message, this.verify.selector, message);
    }

    function verify(bytes calldata, bytes calldata) external pure returns (bool) {
        return true;
    }
}
